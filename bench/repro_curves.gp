# Validation loss vs training tokens for every preset: mean line and a +-1 std band; the logs given
# to `make repro OVERLAY=...` (overlay.labels / overlay.dat) dashed on the same axes, then with a
# logarithmic token axis, since a full-scale PyTorch log runs to billions of tokens.
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
overlays = system("cat ".dir."/overlay.labels 2>/dev/null")
m = words(overlays)
# With overlays the token axis is logarithmic: points at zero tokens are left out (NaN).
x(t) = (m > 0 && t <= 0) ? NaN : t
# The overlay clause only when there are logs (an empty loop still opens its file).
extra = ""
if (m > 0) {
  set logscale x
  set xlabel "training tokens (log scale; zero not shown)"
  extra = ", for [j=1:m] dir.'/overlay.dat' index (j-1) using (x($1)):2 with lines dt 2 lw 2 lc (n + j) title word(overlays, j)"
}
plot for [i=1:n] dir.'/curves.dat' index (i-1) using (x($1)):($2-$3):($2+$3) with filledcurves fs transparent solid 0.2 lc i notitle, \
     for [i=1:n] dir.'/curves.dat' index (i-1) using (x($1)):2 with linespoints lw 2 pt 7 ps 0.6 lc i title word(presets, i) @extra
