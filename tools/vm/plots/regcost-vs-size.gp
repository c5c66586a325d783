# regcost-vs-size.gp - lab 2: registration cost vs buffer size, kernel path vs ibv_reg_mr.
# Input build/labs/2/regbench.dat (per-size medians): size pages reg_us expose_us
# kernel_total_us kernel_per_page_ns revoke_us dereg_us ibv_reg_mr_us ibv_per_page_ns
# ibv_dereg_mr_us
load dir."common.gp"
r = d."/2/regbench.dat"
set multiplot layout 1,2 title "Lab 2: memory registration cost vs buffer size on rxe0 (QEMU TCG, 2 vCPUs, one boot)"
set logscale xy
@sizetics
set xlabel "buffer size (bytes)"
set format y "%g"
set title "total time per buffer"
set key bottom right
set ylabel "microseconds (log)"
plot r u 1:5 w lp ls 1 t "kernel: register (pin + map) + expose (FRWR)", \
     r u 1:3 w lp ls 4 t "kernel: register only", \
     r u 1:9 w lp ls 2 t "userspace ibv_reg_mr", \
     r u 1:($7+$8) w lp ls 3 t "kernel: revoke + deregister", \
     r u 1:11 w lp ls 5 t "userspace ibv_dereg_mr"
set title "cost per 4 KiB page"
set ylabel "nanoseconds per page (log)"
set key top right
plot r u 1:6 w lp ls 1 t "kernel: register + expose", \
     r u 1:10 w lp ls 2 t "userspace ibv_reg_mr"
unset multiplot
