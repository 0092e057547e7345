# Time per training step of every kernel (calls x median), horizontal bars sorted by time, the
# slowest on top; forward kernels blue, backward red, optimizer, data and the rest grey (the legend
# says so). Every bar carries its value in ms with three decimals, the same format throughout.
# Input: the CSV of build/bench/kernels (step.* and ceiling.* rows left out).
# Usage: gnuplot -e "csv='reports/bench/x.csv'; png='reports/bench/x.png'; title='...'" bench/kernels.gp
set terminal pngcairo size 1100,950 font "sans,10" noenhanced
set output png
set datafile separator ","
set title title
set xlabel "ms per training step (calls x median of the kernel alone)"
set style fill solid 0.85 border -1
set grid xtics
set ytics nomirror font "sans,9"
set format x "%.0f"
set xrange [0:*]
set offsets 0, graph 0.12, 0.5, 0.5
set key bottom right box opaque title "kernel kind"
rows = "< grep -v -e '^name,' -e '^step[.]' -e '^ceiling[.]' '".csv."' | sort -t, -k13,13g"
FWD = 0x4477aa
BWD = 0xcc6677
OTHER = 0x999999
isbwd(name) = strstrt(name, ".bwd") || strstrt(name, "fwd_bwd") || strstrt(name, "zero.")
colour(name) = isbwd(name) ? BWD : strstrt(name, ".fwd") ? FWD : OTHER
plot rows using (0.5*$13):0:(0.5*$13):(0.4):(colour(strcol(1))):yticlabels(1) with boxxyerror lc rgb variable notitle, \
     rows using 13:0:(sprintf(" %.3f", $13)) with labels left font "sans,8" notitle, \
     NaN with boxes lc rgb FWD title "forward", \
     NaN with boxes lc rgb BWD title "backward (and the loss with its gradient)", \
     NaN with boxes lc rgb OTHER title "optimizer, data and other"
