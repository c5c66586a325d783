# bench-conns.gp - make bench: RDMA WRITE of 64 KiB over 1, 8, 64 and 256 connections,
# rdmaxfer (bench --conns N) against perftest (ib_write_bw -q N), the same 4096
# operations in all.  Input build/bench/{pair,single}/conns-LAYOUT.dat:
# conns rdmaxfer_mib_s perftest_mib_s rdmaxfer_client_us_op rdmaxfer_server_us_op
#       perftest_client_us_op perftest_server_us_op   (server: NaN in the single layout)
load dir."common.gp"
set multiplot layout 1,2 title "Connections: 64 KiB RDMA WRITE, 4096 operations spread over N (QEMU TCG, one boot per layout)"
set logscale x 2
set xtics ("1" 1, "8" 8, "64" 64, "256" 256)
set xrange [0.7:360]
set xlabel "connections (bench --conns N, ib_write_bw -q N)"
set key bottom right box opaque
set title "bandwidth"
set ylabel "MiB/s"
set yrange [0:*]
plot d."/pair/conns-pair.dat" u 1:2 w lp ls 1 t "rdmaxfer, two guests", \
     "" u 1:3 w lp ls 2 t "perftest, two guests", \
     d."/single/conns-single.dat" u 1:2 w lp ls 3 t "rdmaxfer, one guest", \
     "" u 1:3 w lp ls 4 t "perftest, one guest"
set title "CPU per operation (busy time beyond set-up)"
set key top left box opaque
set ylabel "us per 64 KiB operation"
set logscale y 10
set yrange [*:*]
plot d."/pair/conns-pair.dat" u 1:4 w lp ls 1 t "rdmaxfer client", \
     "" u 1:5 w lp ls 1 dt 2 t "rdmaxfer server", \
     "" u 1:6 w lp ls 2 t "perftest client", \
     "" u 1:7 w lp ls 2 dt 2 t "perftest server", \
     d."/single/conns-single.dat" u 1:4 w lp ls 3 t "rdmaxfer, one guest (both ends)", \
     "" u 1:6 w lp ls 4 t "perftest, one guest (both ends)"
unset multiplot
