# conns.gp - lab 5: bandwidth vs number of connections. Input build/labs/5/conns.dat:
# conns write_mib_s read_mib_s write_mpps write_cpu_sys_pct read_cpu_sys_pct
load dir."common.gp"
set terminal pngcairo size 800,460 font "DejaVu Sans,10" noenhanced
set output out
set title "Lab 5: bandwidth vs connections, 64 KiB messages, MTU 9000 (QEMU TCG, 2 vCPUs, one boot)"
set xlabel "connections (--conns)"
set logscale x 2
set xtics ("1" 1, "2" 2, "4" 4, "8" 8)
set xrange [0.8:10]
set ylabel "MiB/s"
set yrange [0:*]
set y2label "guest CPU busy (% of one CPU; 200 = both vCPUs)"
set y2range [0:210]
set y2tics
set key bottom right
plot d."/5/conns.dat" u 1:2 w lp ls 1 t "RDMA WRITE", \
     "" u 1:3 w lp ls 2 t "RDMA READ", \
     "" u 1:5 axes x1y2 w lp ls 5 t "CPU during WRITE (right axis)"
