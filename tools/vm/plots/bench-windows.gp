# bench-windows.gp - make bench: 4 KiB RDMA WRITEs spread over 1, 64 and 1024
# windows of serve's 64 MiB (bench --windows N: operation k to window k % N),
# rdmaxfer alone.  Input build/bench/{pair,single}/windows-LAYOUT.dat:
# windows rdmaxfer_mpps expose_us_per_window client_us_op server_us_op
#         (server: NaN in the single layout, where "client" is both ends)
load dir."common.gp"
set multiplot layout 1,2 title "Windows: 4 KiB RDMA WRITE over N windows of one buffer (QEMU TCG, one boot per layout)"
set logscale x 2
set xtics ("1" 1, "64" 64, "1024" 1024)
set xrange [0.7:1500]
set xlabel "windows per connection (bench --windows N)"
set key bottom left box opaque
set title "message rate"
set ylabel "million WRITEs per second"
set yrange [0:*]
plot d."/pair/windows-pair.dat" u 1:2 w lp ls 1 t "two guests", \
     d."/single/windows-single.dat" u 1:2 w lp ls 3 t "one guest"
set title "CPU per operation and EXPOSE per window"
set key top left box opaque
set ylabel "microseconds"
set logscale y 10
set yrange [*:*]
plot d."/pair/windows-pair.dat" u 1:4 w lp ls 1 t "per WRITE, client", \
     "" u 1:5 w lp ls 1 dt 2 t "per WRITE, server", \
     "" u 1:3 w lp ls 2 t "EXPOSE per window, two guests", \
     d."/single/windows-single.dat" u 1:4 w lp ls 3 t "per WRITE, one guest (both ends)", \
     "" u 1:3 w lp ls 4 t "EXPOSE per window, one guest"
unset multiplot
