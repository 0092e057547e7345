# Validation loss vs training tokens for every preset: the mean over seeds with +-1 std error bars
# at every validation, and an inset with the final validation loss of each preset, mean +-1 std
# drawn and written out (the spread between seeds is small next to the curves' range, so bars
# alone would not show it). Colours and point shapes differ per preset; every colour has at least
# 3:1 contrast against the white background (no pale yellow), and the two lowest curves
# (value-embed, softcap) get red and blue. The logs given to `make repro OVERLAY=...`
# (overlay.labels / overlay.dat) are drawn dashed on the same axes, then with a logarithmic token
# axis, since a full-scale PyTorch log runs to billions of tokens.
# Usage: gnuplot -e "dir='reports/repro'" bench/repro_curves.gp
set terminal pngcairo size 1000,640 font ",11"
set output dir.'/curves.png'
presets = system("cat ".dir."/curves.presets")
n = words(presets)
overlays = system("cat ".dir."/overlay.labels 2>/dev/null")
m = words(overlays)
array COLOUR[8] = [0x444444, 0x228833, 0xbb5500, 0xaa3377, 0xcc3311, 0x0077bb, 0x009988, 0x000000]
array POINT[8] = [5, 7, 9, 11, 13, 15, 4, 6]
set multiplot
set title "Validation loss vs training tokens (mean over seeds, bars = ±1 std)"
set xlabel "training tokens"
set ylabel "validation loss"
set key top right
set grid
# With overlays the token axis is logarithmic: points at zero tokens are left out (NaN).
x(t) = (m > 0 && t <= 0) ? NaN : t
# The overlay clause only when there are logs (an empty loop still opens its file).
extra = ""
if (m > 0) {
  set logscale x
  set xlabel "training tokens (log scale; zero not shown)"
  extra = ", for [j=1:m] dir.'/overlay.dat' index (j-1) using (x($1)):2 with lines dt 2 lw 2 lc rgb COLOUR[(n + j - 1) % 8 + 1] title word(overlays, j)"
}
plot for [i=1:n] dir.'/curves.dat' index (i-1) using (x($1)):2:3 with yerrorlines lw 2 pt POINT[i] ps 0.7 lc rgb COLOUR[i] \
     title word(presets, i) @extra
# Inset: the last record of every preset's block (blocks are blank-line separated: awk paragraphs).
unset logscale x
set origin 0.30, 0.40
set size 0.46, 0.44
set title "final val loss, mean ± 1 std over seeds" font ",10"
unset xlabel
set ylabel "val loss" font ",9"
set xrange [0.5:n + 0.5]
set xtics rotate by 30 right font ",8" nomirror
set ytics font ",8"
unset key
set object 1 rectangle from graph 0, graph 0 to graph 1, graph 1 behind fillcolor rgb "white" fillstyle solid 1.0
finals = "< awk 'BEGIN { RS = \"\" } { n = split($0, l, \"\\n\"); print NR, l[n] }' '".dir."/curves.dat'"
stats finals using 3 nooutput
pad = STATS_max > STATS_min ? 0.45 * (STATS_max - STATS_min) : 0.1
set yrange [STATS_min - pad : STATS_max + pad]
plot finals using 1:3:4:(COLOUR[int($1)]):xtic(word(presets, int($1))) with yerrorbars lw 2 pt 7 ps 0.8 lc rgb variable, \
     finals using 1:($3 + $4):(sprintf("%.3f\n±%.3f", $3, $4)) with labels offset 0, 1.6 font ",7"
unset multiplot
