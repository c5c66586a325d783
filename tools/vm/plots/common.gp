# common.gp - shared settings of the lab plots. tools/vm/labs.sh runs
#   gnuplot -e "d='build/labs'; out='build/labs/NAME.png'; dir='tools/vm/plots/'" NAME.gp
# A series whose .dat file is missing (a failed measurement) is left out with a warning.
set terminal pngcairo size 1100,460 font "DejaVu Sans,10" noenhanced
set output out
set grid lc rgb "#dddddd"
set key top left box opaque
set style line 1 lc rgb "#1f77b4" lw 2 pt 7 ps 0.8
set style line 2 lc rgb "#d62728" lw 2 pt 5 ps 0.8
set style line 3 lc rgb "#2ca02c" lw 2 pt 9 ps 0.9
set style line 4 lc rgb "#ff7f0e" lw 2 pt 13 ps 0.9
set style line 5 lc rgb "#7f7f7f" lw 2 pt 11 ps 0.9 dt 2
set style line 6 lc rgb "#9467bd" lw 2 pt 3 ps 0.9 dt 4
# byte sizes on a log2 axis
sizetics = 'set xtics ("64" 64, "256" 256, "1K" 1024, "4K" 4096, "16K" 16384, "64K" 65536, "256K" 262144, "1M" 1048576, "4M" 4194304, "16M" 16777216, "64M" 67108864, "256M" 268435456)'
