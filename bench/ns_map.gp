# The Newton-Schulz scalar map sigma_in -> sigma_out after 5 steps for each coefficient set
# (curve), with the measured u_i^T Q v_i of the 768x768 and 768x3072 Gaussian inputs overlaid.
# Precision is told by shape and colour family: bf16 open symbols in reds (circle 768x768, square
# 768x3072), fp32 line symbols in blues (plus 768x768, cross 768x3072), drawn over the bf16 ones;
# every 12th singular value is drawn, so that single markers stay apart on the curve.
# The sigma_in axis is logarithmic, its ticks written as powers of ten. Every symbol is defined on
# the chart: X is G divided by a little more than its Frobenius norm (each set's scale and eps,
# optim/ns_coeffs.c), so that every sigma_in lies below 1.
# Input: ns_map.dat from build/bench/ns_report (blocks: 4 curves, then per input shape, per set:
# fp32 and bf16 measurements).
# Usage: gnuplot -e "dir='reports/ns'" bench/ns_map.gp
set terminal pngcairo size 1200,900 font "sans,10" enhanced
set output dir.'/ns_map.png'
set multiplot layout 2,2 title "Newton-Schulz, 5 steps on X = G normalized: sigma_out vs sigma_in (curve: the scalar map; points: u_i^T Q v_i measured, Q the output, u_i, v_i the singular vectors of X)" noenhanced
set logscale x
set xrange [1e-5:1.2]
set xtics 10 format "10^{%L}"
set yrange [0:1.6]
set xlabel "sigma_in: singular value of X (||X||_F < 1)" noenhanced
set ylabel "sigma_out" noenhanced
set grid
set key top left
names = "quintic cubic you5 polar-express"
do for [i=0:3] {
  set title word(names, i+1) noenhanced
  plot dir.'/ns_map.dat' index i with lines lw 2 lc rgb "black" title "p_5(x)" noenhanced, \
       '' index 5+2*i every 12 with points pt 6 ps 1.1 lc rgb "#d62728" title "bf16 768x768", \
       '' index 13+2*i every 12 with points pt 4 ps 1.1 lc rgb "#ff7f0e" title "bf16 768x3072", \
       '' index 4+2*i every 12::6 with points pt 1 ps 1.1 lw 1.5 lc rgb "#1f77b4" title "fp32 768x768", \
       '' index 12+2*i every 12::6 with points pt 2 ps 1.1 lw 1.5 lc rgb "#17becf" title "fp32 768x3072", \
       1 with lines dt 2 lc rgb "gray" notitle
}
unset multiplot
