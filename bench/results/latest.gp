set terminal pngcairo size 1600,700 noenhanced font ",9"
set output "/work/main/bench/results/latest.png"
set title "smbcluster node vs Samba: median MiB/s per cell (loopback)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "MiB/s"
set logscale y
set yrange [1:*]
set xtics rotate by -60 scale 0
set key top left
set grid ytics
plot "/work/main/bench/results/latest.dat" using 2:xtic(1) title "ours", '' using 3 title "Samba"
