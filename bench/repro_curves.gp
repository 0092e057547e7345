# Validation loss vs training tokens for every preset: mean line and a +-1 std band.
# Usage: gnuplot -e "dir='reports/repro'" bench/repro_curves.gp
set terminal pngcairo size 1000,640 font ",11"
set output dir.'/curves.png'
set title "Validation loss vs training tokens (mean over seeds, band = ±1 std)"
set xlabel "training tokens"
set ylabel "validation loss"
set key top right
set grid
presets = system("cat ".dir."/curves.presets")
n = words(presets)
plot for [i=1:n] dir.'/curves.dat' index (i-1) using 1:($2-$3):($2+$3) with filledcurves fs transparent solid 0.2 lc i notitle, \
     for [i=1:n] dir.'/curves.dat' index (i-1) using 1:2 with linespoints lw 2 pt 7 ps 0.6 lc i title word(presets, i)
