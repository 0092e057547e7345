# Validation loss vs training tokens for every preset, in three panels side by side (none drawn
# over another's curves): left, the mean over seeds; top right, each preset's final validation
# loss, mean with +-1 sd written out; bottom right, the spread between seeds (sd of the validation
# loss) along the way, on its own zero-based axis: next to the loss range (about 4) an sd of 0.01
# would be a bar under 2 px, so the spread gets an axis of its own rather than invisible bars.
# Each preset has one colour and point shape, looked up by its name (PRESETS below), so a preset
# looks the same in every chart whatever presets are drawn with it (variants below); every colour has at least 3:1
# contrast against the white background; the two lowest curves of the records up to #18
# (value-embed, softcap) are red and blue, and normuon (softcap's model with record #43's
# optimizer, compared with softcap above all) is teal. The logs given to `make repro OVERLAY=...` (overlay.labels / overlay.dat) are drawn
# dashed in colours of their own on the loss panel, then with a logarithmic token axis (a
# full-scale PyTorch log runs to billions of tokens).
# Usage: gnuplot -e "dir='reports/repro'" bench/repro_curves.gp, or without dir in the report's folder
# (bench/repro.sh: a folder whose name holds a space or a quote is never spelled in a command).
if (!exists("dir")) dir = "."
set terminal pngcairo size 1200,680 font ",11"
set output dir.'/curves.png'
presets = system("cat ".dir."/curves.presets")
n = words(presets)
overlays = system("cat ".dir."/overlay.labels 2>/dev/null")
m = words(overlays)
# The presets in record order with their colours and point types (a name not among them: below).
PRESETS = " adamw muon-v1 muon-v2 untied value-embed softcap normuon "
array COLOUR[7] = [0x444444, 0x228833, 0xbb5500, 0xaa3377, 0xcc3311, 0x0077bb, 0x009988]
array POINT[7] = [5, 7, 9, 11, 13, 15, 6]
array OVERLAY_COLOUR[4] = [0x000000, 0x886600, 0x6644aa, 0x888822]
slot(name) = strstrt(PRESETS, " ".name." ") ? words(PRESETS[1:strstrt(PRESETS, " ".name." ")]) + 1 : 0
# A name not in the table (a variant, LABEL=PRESET:FLAGS in bench/repro.sh) takes the next of four
# colours and point types of its own, in the order the variants are listed.
array VARIANT_COLOUR[4] = [0x882255, 0x8c510a, 0x5d3a9b, 0x777700]
array VARIANT_POINT[4] = [4, 8, 10, 12]
variants_to(i) = i < 1 ? 0 : variants_to(i - 1) + (slot(word(presets, i)) ? 0 : 1)
colour(i) = slot(word(presets, i)) ? COLOUR[slot(word(presets, i))] : VARIANT_COLOUR[(variants_to(i) - 1) % 4 + 1]
point(i) = slot(word(presets, i)) ? POINT[slot(word(presets, i))] : VARIANT_POINT[(variants_to(i) - 1) % 4 + 1]
# Token ticks with an SI suffix (20k, 1M, 2G): short enough never to run together.
set format x "%.0s%c"
set grid
set multiplot

# Left: the mean curves, the x axis ending at the last validation (no tick beyond the data).
set origin 0, 0
set size 0.6, 1
set lmargin 9
set rmargin 3
set title "Validation loss vs training tokens (mean over seeds)"
set xlabel "training tokens (k = 10^3, M = 10^6, G = 10^9)"
set ylabel "validation loss"
set key top right
# The x axis ends a little past the last validation: its points are not cut in half by the
# border and no tick lies beyond the data.
set autoscale xfixmax
set offsets 0, graph 0.03, 0, 0
# With overlays the token axis is logarithmic: points at zero tokens are left out (NaN).
x(t) = (m > 0 && t <= 0) ? NaN : t
# The overlay clause only when there are logs (an empty loop still opens its file).
extra = ""
if (m > 0) {
  set logscale x
  set autoscale xfix
  set offsets graph 0.03, graph 0.03, 0, 0
  set xlabel "training tokens (log scale, zero not shown; k = 10^3, M = 10^6, G = 10^9)"
  extra = ", for [j=1:m] dir.'/overlay.dat' index (j-1) using (x($1)):2 with lines dt 2 lw 2 lc rgb OVERLAY_COLOUR[(j - 1) % 4 + 1] title word(overlays, j)"
}
plot for [i=1:n] dir.'/curves.dat' index (i-1) using (x($1)):2 with linespoints lw 2 pt point(i) ps 0.8 lc rgb colour(i) \
     title word(presets, i) @extra

# Bottom right: sd between seeds vs tokens on a linear token axis from zero (the overlays, which
# have no seeds, are not drawn here).
unset logscale x
set offsets 0, graph 0.03, 0, 0
set origin 0.6, 0
set size 0.4, 0.5
set lmargin 10
set rmargin 2
set title "spread between seeds (sd of the validation loss)" font ",10"
set xlabel "training tokens" font ",10"
set ylabel "sd" font ",10"
set yrange [0:*]
set xtics font ",9"
set ytics font ",9"
unset key
plot for [i=1:n] dir.'/curves.dat' index (i-1) using 1:3 with linespoints lw 2 pt point(i) ps 0.6 lc rgb colour(i) \
     title "sd of ".word(presets, i)

# Top right: the last record of every preset's block (blocks are blank-line separated: awk
# paragraphs), one row per preset (the names read level, however many), the mean with +-1 sd bars
# and both written out right of the bar.
set offsets 0, 0, 0, 0
set origin 0.6, 0.5
set size 0.4, 0.5
set title "final validation loss, mean ± 1 sd over seeds" font ",10"
set xlabel "validation loss" font ",10"
unset ylabel
# The names are this panel's y tick labels: its left margin (in characters of the default 11-point
# font; the labels are 9-point) grows with the longest, so a variant's label stays inside the panel.
longest = 0
do for [i=1:n] { longest = strlen(word(presets, i)) > longest ? strlen(word(presets, i)) : longest }
set lmargin (longest * 0.75 + 2 > 10 ? longest * 0.75 + 2 : 10)
set format x "%g"
set ytics 1 font ",9" nomirror
set grid noytics
finals = "< awk 'BEGIN { RS = \"\" } { n = split($0, l, \"\\n\"); print NR, l[n] }' '".dir."/curves.dat'"
set autoscale
stats finals using 3 nooutput
set yrange [n + 0.5:0.5]
pad = STATS_max > STATS_min ? 0.6 * (STATS_max - STATS_min) : 0.1
set xrange [STATS_min - pad : STATS_max + pad]
plot finals using 3:1:4:(colour(int($1))):ytic(word(presets, int($1))) with xerrorbars lw 2 pt 7 ps 0.8 lc rgb variable \
     title "final", \
     finals using ($3 + $4):1:(sprintf("%.3f ± %.3f", $3, $4)) with labels left offset 1, 0 font ",8" title "final values"
unset multiplot
