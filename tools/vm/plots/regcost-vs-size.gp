# regcost-vs-size.gp - lab 2: registration cost vs buffer size, kernel path vs ibv_reg_mr,
# with transparent huge pages (regbench.dat) and without (regbench-nothp.dat, --no-thp).
# Columns (medians per size): size pages reg_us expose_us kernel_total_us kernel_per_page_ns
# revoke_us dereg_us ibv_reg_mr_us ibv_per_page_ns ibv_dereg_mr_us windows
load dir."common.gp"
r = d."/2/regbench.dat"
n = d."/2/regbench-nothp.dat"
set multiplot layout 1,2 title "Lab 2: memory registration cost vs buffer size on rxe0 (QEMU TCG, 2 vCPUs, one boot)"
set logscale xy
@sizetics
set xlabel "buffer size (bytes)"
set format y "%g"
set key top left font ",9"
set title "time to register one buffer"
set ylabel "microseconds (log)"
plot r u 1:5 w lp ls 1 t "kernel: pin + DMA-map + FRWR + advertise", \
     n u 1:5 w lp ls 1 dt 2 pt 6 t "kernel, 4 KiB pages only", \
     r u 1:9 w lp ls 2 t "userspace ibv_reg_mr", \
     n u 1:9 w lp ls 2 dt 2 pt 4 t "ibv_reg_mr, 4 KiB pages only"
set title "cost per 4 KiB page"
set key top right font ",9"
set ylabel "nanoseconds per page (log)"
plot r u 1:6 w lp ls 1 t "kernel: pin + DMA-map + FRWR + advertise", \
     n u 1:6 w lp ls 1 dt 2 pt 6 t "kernel, 4 KiB pages only", \
     r u 1:10 w lp ls 2 t "userspace ibv_reg_mr", \
     n u 1:10 w lp ls 2 dt 2 pt 4 t "ibv_reg_mr, 4 KiB pages only"
unset multiplot
