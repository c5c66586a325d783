# mtu.gp - lab 5: bandwidth vs MTU. Input build/labs/5/mtu.dat: netdev_mtu ib_mtu
# write_mib_s read_mib_s tcp_mib_s write_cpu_sys_pct
load dir."common.gp"
set terminal pngcairo size 800,460 font "DejaVu Sans,10" noenhanced
set output out
set title "Lab 5: bandwidth vs MTU, 64 KiB messages, 1 connection (QEMU TCG, 2 vCPUs, one boot)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xlabel "veth MTU (rxe0's active IB MTU)"
set ylabel "MiB/s"
# head room above the tallest bar for the key
stats d."/5/mtu.dat" u 5 nooutput
set yrange [0:STATS_max * 1.3]
set key top left horizontal
plot d."/5/mtu.dat" u 3:xtic(sprintf("%d (IB %d)", $1, $2)) lc rgb "#1f77b4" t "RDMA WRITE", \
     "" u 4 lc rgb "#d62728" t "RDMA READ", \
     "" u 5 lc rgb "#aaaaaa" t "TCP (64 KiB messages, over lo)"
