# latency-cdf.gp - lab 3: round-trip latency CDF per transport. Input build/labs/3/:
# cdf-T-OP.dat (x_us fraction: cumulative fraction at the edges of ping's log2 histogram
# buckets, exact there, straight lines between) and pct-T-OP.dat (x_us fraction: the exact
# min, p50, p99, p99.9 and max that ping computed from all samples).
load dir."common.gp"
c(n) = d."/3/cdf-".n.".dat"
p(n) = d."/3/pct-".n.".dat"
set multiplot layout 1,2 title "Lab 3: round-trip latency, 64 bytes, client and server on rxe0 (QEMU TCG, 2 vCPUs, one boot)"
set logscale x 10
set xlabel "round-trip time (log scale)"
set xtics ("10 us" 10, "100 us" 100, "1 ms" 1000, "10 ms" 10000, "100 ms" 100000, "1 s" 1000000)
set title "CDF (lines: log2 histogram buckets; points: exact min, p50, p99, p99.9, max)"
set ylabel "fraction of round trips <= x"
set yrange [0:1.02]
set key bottom right font ",9"
plot c("rdma-send-busy") u 1:2 w l ls 3 t "RDMA SEND, --poll busy", p("rdma-send-busy") u 1:2 w p ls 3 notitle, \
     c("rdma-send-block") u 1:2 w l ls 4 t "RDMA SEND, --poll block", p("rdma-send-block") u 1:2 w p ls 4 notitle, \
     c("rdma-write") u 1:2 w l ls 1 t "RDMA WRITE", p("rdma-write") u 1:2 w p ls 1 notitle, \
     c("rdma-read") u 1:2 w l ls 2 t "RDMA READ", p("rdma-read") u 1:2 w p ls 2 notitle, \
     c("udp-send") u 1:2 w l ls 5 t "UDP", p("udp-send") u 1:2 w p ls 5 notitle, \
     c("tcp-send") u 1:2 w l ls 6 t "TCP", p("tcp-send") u 1:2 w p ls 6 notitle
set title "tail: fraction of round trips > x"
set ylabel "1 - CDF (log)"
set logscale y 10
set yrange [1e-4:1.2]
set key top right font ",9"
# the last bucket edge (fraction 1) has no place on a log axis
t(y) = (1 - y) > 1e-9 ? 1 - y : NaN
plot c("rdma-send-busy") u 1:(t($2)) w l ls 3 t "RDMA SEND, --poll busy", \
     c("rdma-send-block") u 1:(t($2)) w l ls 4 t "RDMA SEND, --poll block", \
     c("rdma-write") u 1:(t($2)) w l ls 1 t "RDMA WRITE", \
     c("rdma-read") u 1:(t($2)) w l ls 2 t "RDMA READ", \
     c("udp-send") u 1:(t($2)) w l ls 5 t "UDP", \
     c("tcp-send") u 1:(t($2)) w l ls 6 t "TCP"
unset multiplot
