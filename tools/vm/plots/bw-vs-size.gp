# bw-vs-size.gp - lab 4: bandwidth and message rate vs message size. Input
# build/labs/4/bw-T-OP.dat: size iters bytes secs bw_mib_s msg_rate_mpps cpu_client_pct
# cpu_client_sys_pct
load dir."common.gp"
f(n) = d."/4/bw-".n.".dat"
set multiplot layout 1,2 title "Lab 4: bandwidth vs message size, 1 connection, client and server on rxe0 (QEMU TCG, 2 vCPUs, one boot)"
set logscale x 2
@sizetics
set xlabel "message size (bytes)"
set title "bandwidth"
set ylabel "MiB/s"
set yrange [0:*]
plot f("rdma-write") u 1:5 w lp ls 1 t "RDMA WRITE", \
     f("rdma-read") u 1:5 w lp ls 2 t "RDMA READ", \
     f("rdma-send") u 1:5 w lp ls 3 t "RDMA SEND", \
     f("tcp-send") u 1:5 w lp ls 5 t "TCP"
set title "message rate"
set ylabel "thousand messages/s (log)"
set logscale y 10
set yrange [*:*]
set key top right
plot f("rdma-write") u 1:($6*1000) w lp ls 1 t "RDMA WRITE", \
     f("rdma-read") u 1:($6*1000) w lp ls 2 t "RDMA READ", \
     f("rdma-send") u 1:($6*1000) w lp ls 3 t "RDMA SEND", \
     f("tcp-send") u 1:($6*1000) w lp ls 5 t "TCP"
unset multiplot
