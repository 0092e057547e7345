# Time per training step of every kernel (the sum of its calls in a step), horizontal bars sorted by
# time, the slowest on top, labelled "part:kernel shape"; the model's forward kernels blue, its
# backward red (the loss with its gradient too), optimizer, data and the rest grey (the legend
# says so). Every bar
# carries its value in ms with three decimals, the same format throughout. The x axis has at most
# six tick steps of 1, 2 or 5 x 10^k ms, written with as many decimals as the step needs (0, 2000,
# ..., 10000; 0.002, 0.004, ...), so that its labels never run together.
# Input: the CSV of build/bench/kernels (step.* and ceiling.* rows left out).
# Usage: gnuplot -e "csv='reports/bench/x.csv'; png='reports/bench/x.png'; title='...'" bench/kernels.gp
set terminal pngcairo size 1100,950 font "sans,10" noenhanced
set output png
set datafile separator ","
set title title
set xlabel "ms per training step (the sum of the kernel's calls in the real step)"
set style fill solid 0.85 border -1
set grid xtics
set ytics nomirror font "sans,9"
set xrange [0:*]
set autoscale xfixmax
set rmargin 6
set offsets 0, graph 0.15, 0.5, 0.5
set key bottom right box opaque title "kernel kind"
rows = "< grep -v -e '^name,' -e '^step[.]' -e '^ceiling[.]' '".csv."' | sort -t, -k13,13g"
stats rows using 13 nooutput
raw = (STATS_max > 0 ? STATS_max : 1e-3) / 6
e = floor(log10(raw))
f = raw / 10.0**e
step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * 10.0**e
set xtics step
set format x sprintf("%%.%df", e < 0 ? -e : 0)
FWD = 0x4477aa
BWD = 0xcc6677
OTHER = 0x999999
# Forward and backward are the model's kernels (the optimizer calls lincomb_fwd too: grey).
colour(name) = strstrt(name, "model:") != 1 ? OTHER : strstrt(name, "_bwd") ? BWD : strstrt(name, "_fwd") ? FWD : OTHER
plot rows using (0.5*$13):0:(0.5*$13):(0.4):(colour(strcol(1))):yticlabels(strcol(1)." ".strcol(2)) with boxxyerror lc rgb variable notitle, \
     rows using 13:0:(sprintf(" %.3f", $13)) with labels left font "sans,8" notitle, \
     NaN with boxes lc rgb FWD title "forward", \
     NaN with boxes lc rgb BWD title "backward (and the loss with its gradient)", \
     NaN with boxes lc rgb OTHER title "optimizer, data and other"
