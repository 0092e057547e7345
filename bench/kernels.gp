# Time per training step of every kernel (the sum of its calls in a step), horizontal bars sorted by
# time, the slowest on top, labelled "part:kernel shape"; the model's forward kernels blue, its
# backward red (the loss with its gradient too), optimizer, data and the rest grey (the legend
# says so). Every bar
# carries its value in ms with three decimals, the same format throughout.
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
set format x "%.2f"
set xrange [0:*]
set offsets 0, graph 0.12, 0.5, 0.5
set key bottom right box opaque title "kernel kind"
rows = "< grep -v -e '^name,' -e '^step[.]' -e '^ceiling[.]' '".csv."' | sort -t, -k13,13g"
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
