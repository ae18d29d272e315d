#!/usr/bin/env bash
# plot_rwbench.sh — PNG plots (gnuplot) of the CSV that `ruma rwbench vector` and
# `ruma rwbench partition` write on stdout (or with --csv FILE).
#
# Usage:
#   scripts/plot_rwbench.sh [-o DIR] [-n NAME] [-t NOTE] [-q] CSV
#
#   CSV      one CSV of one run, either of `ruma rwbench vector ...` or of
#            `ruma rwbench partition ...` (recognised by its header line; `-` = stdin)
#   -o DIR   where the PNGs go (default: the current directory; created if missing)
#   -n NAME  file name prefix (default: rwbench)
#   -t NOTE  extra text for the plot titles, e.g. "shared VM, load 1.2"
#   -L       logarithmic y axis for the time plots (when a few outliers squeeze the medians)
#   -q       do not print the statistics table on stdout
#
# Output:
#   vector CSV     DIR/NAME-vector-time.png    ns per push vs number of elements
#                  DIR/NAME-vector-memory.png  peak memory / data size vs number of elements
#                                              (data size = 8 bytes x elements; peak memory is
#                                              the CSV's peak_rss_bytes: the child's ru_maxrss
#                                              minus an idle child's, plus hugetlb held)
#   partition CSV  DIR/NAME-partition.png      ns per key vs number of partitions
#   stdout         the statistics the plots show: variant, x, median, min, max, count
#                  (tab-separated, one line per (variant, x))
#
# Statistics:
#   Per (variant, x) — x is the number of elements n (vector) or of partitions P (partition) —
#   the script takes the median, minimum and maximum over the measured repetitions (rep >= 1).
#   rwbench does not write its warm-up repetition (rep 0) to the CSV; should a row with rep 0
#   appear it is dropped too.  Median of an even count = mean of the two middle values.
#   Each variant is one line through its medians, with min–max error bars.  On the log2 x axis
#   the variants' points are shifted by a small fraction of an octave (a few percent of x) so
#   the error bars do not cover each other; the shift is the same for every x of a variant.
#   If a partition CSV holds several pages_per_block values, each (variant, pages_per_block)
#   is its own line.  The legend follows rwbench's own variant order: rwbench rotates the order
#   by one variant per repetition (rep r starts at variant r mod V), and the script undoes that
#   rotation on the first x of the lowest repetition; when that group is incomplete (a variant
#   failed there) it falls back to the order of first appearance.
#
# Needs: bash, awk, sort, gnuplot with the pngcairo terminal.  Exit status: 0 ok,
# 1 failure (gnuplot), 2 bad usage or input.
#
# Example:
#   ruma rwbench vector --min-log 20 --max-log 24 --reps 5 > vec.csv
#   ruma rwbench partition --n 16M --partitions 16,64,256,1024 --reps 5 > part.csv
#   scripts/plot_rwbench.sh -o docs/img vec.csv
#   scripts/plot_rwbench.sh -o docs/img part.csv

set -euo pipefail

prog=${0##*/}
die() { echo "$prog: $*" >&2; exit 2; }
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }

outdir=.
name=rwbench
note=
quiet=0
logy=0
while getopts ":o:n:t:Lqh" opt; do
	case $opt in
	o) outdir=$OPTARG ;;
	n) name=$OPTARG ;;
	t) note=$OPTARG ;;
	q) quiet=1 ;;
	L) logy=1 ;;
	h) usage ;;
	:) die "option -$OPTARG needs a value" ;;
	*) die "unknown option -$OPTARG (see -h)" ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || die "expected exactly one CSV file (see -h)"
csv=$1
[ "$csv" = - ] || [ -r "$csv" ] || die "cannot read $csv"
[[ $name =~ ^[A-Za-z0-9._-]+$ ]] || die "-n: use letters, digits, '.', '_', '-' only"
command -v gnuplot >/dev/null || { echo "$prog: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
mkdir -p "$outdir" || die "cannot create $outdir"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/plot_rwbench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cat -- "$csv" > "$tmp/in.csv"

# ---- 1. rows -> "group<TAB>x<TAB>time<TAB>mem<TAB>rep<TAB>order" (measured reps only) ----
# time: ns per push (vector) or ns per key (partition); mem: peak / data size (vector only).
# Also writes $tmp/kind (vector|partition) and $tmp/meta (n and pages_per_block for titles).
awk -F, -v tmp="$tmp" -v prog="$prog" '
function need(c) { if (!(c in col)) { printf "%s: missing column %s in the header\n", prog, c > "/dev/stderr"; bad = 1; exit 2 } }
function isnum(s) { return s ~ /^[0-9]+([.][0-9]*)?([eE][-+]?[0-9]+)?$/ }
NR == 1 {
	for (i = 1; i <= NF; i++) col[$i] = i
	if ("mpush_per_s" in col) kind = "vector"
	else if ("partitions" in col && "pages_per_block" in col) kind = "partition"
	else { print prog ": not a CSV of rwbench vector or partition (header: " $0 ")" > "/dev/stderr"; bad = 1; exit 2 }
	need("variant"); need("rep"); need("seconds"); need("n")
	if (kind == "vector") need("peak_rss_bytes")
	next
}
NF == 0 { next }
{
	if ($1 != kind) { printf "%s: line %d: bench \"%s\" in a %s CSV\n", prog, NR, $1, kind > "/dev/stderr"; bad = 1; exit 2 }
	v = $col["variant"]; rep = $col["rep"]; s = $col["seconds"]; n = $col["n"]
	if (!isnum(rep) || !isnum(s) || !isnum(n) || n + 0 <= 0 || s + 0 <= 0) {
		printf "%s: line %d: bad numbers: %s\n", prog, NR, $0 > "/dev/stderr"; bad = 1; exit 2
	}
	if (rep + 0 < 1) next                                   # warm-up, if ever written
	if (kind == "vector") {
		x = n; g = v
		mem = $col["peak_rss_bytes"] / (8 * n)
	} else {
		x = $col["partitions"]; ppb = $col["pages_per_block"]; mem = 0
		ppbs[ppb] = 1; ns[n] = 1
		g = v SUBSEP ppb
	}
	if (!(g in seen)) { seen[g] = ++ng; gname[ng] = g }
	printf "%s\t%s\t%.6f\t%.6f\t%d\t%d\n", g, x, s * 1e9 / n, mem, rep, seen[g]
	rows++
}
END {
	if (bad) exit 2
	if (rows == 0) { print prog ": no measured rows in the CSV" > "/dev/stderr"; exit 2 }
	print kind > (tmp "/kind")
	if (kind == "partition") {
		nn = 0; for (k in ns) { nval = k; nn++ }
		if (nn != 1) { print prog ": the CSV mixes several --n values; plot one run per call" > "/dev/stderr"; exit 2 }
		np = 0; for (k in ppbs) { pval = k; np++ }
		print nval, np, pval > (tmp "/meta")
	}
}' "$tmp/in.csv" > "$tmp/rows.tsv" || exit 2
kind=$(cat "$tmp/kind")

# Group labels: vector groups are variant names; partition groups are "variant<SUBSEP>ppb",
# shown as the variant name, or "variant (ppb K)" when the CSV holds several ppb values.
nppb=1
if [ "$kind" = partition ]; then
	read -r nkeys nppb ppb1 < "$tmp/meta"
fi

# ---- 2. legend order: undo rwbench's rotation in the first x of the lowest rep ----
awk -F'\t' '
{
	if (!(($1) in first)) { first[$1] = $6; ord[$6] = $1; nv++ }
	if (minrep == "" || $5 < minrep) minrep = $5
	r[NR] = $5; xx[NR] = $2; gg[NR] = $1
}
END {
	# first x seen in the lowest rep, and the group sequence measured there
	for (i = 1; i <= NR; i++) if (r[i] == minrep) { x0 = xx[i]; break }
	m = 0
	for (i = 1; i <= NR; i++) if (r[i] == minrep && xx[i] == x0) seq[m++] = gg[i]
	if (m == nv) {
		for (c = 0; c < nv; c++) print seq[((c - minrep) % nv + nv) % nv]
	} else {
		for (c = 1; c <= nv; c++) print ord[c]
	}
}' "$tmp/rows.tsv" > "$tmp/order"

# ---- 3. median / min / max per (group, x) for one value column ----
# stats COLUMN OUT: OUT gets "group<TAB>x<TAB>median<TAB>min<TAB>max<TAB>count", sorted.
stats() {
	cut -f1,2,"$1" "$tmp/rows.tsv" | LC_ALL=C sort -t$'\t' -k1,1 -k2,2g -k3,3g | awk -F'\t' '
	function flush() {
		if (cnt == 0) return
		med = (cnt % 2) ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
		printf "%s\t%s\t%.4f\t%.4f\t%.4f\t%d\n", key1, key2, med, v[1], v[cnt], cnt
		cnt = 0
	}
	{
		if ($1 != key1 || $2 != key2) { flush(); key1 = $1; key2 = $2 }
		v[++cnt] = $3
	}
	END { flush() }' > "$2"
}
stats 3 "$tmp/time.tsv"
[ "$kind" = vector ] && stats 4 "$tmp/mem.tsv"

label_of() { # group key -> legend label
	local g=$1 v ppb
	if [ "$kind" = partition ]; then
		v=${g%$'\034'*}; ppb=${g##*$'\034'}
		if [ "$nppb" -gt 1 ]; then printf '%s (ppb %s)' "$v" "$ppb"; else printf '%s' "$v"; fi
	else
		printf '%s' "$g"
	fi
}

# ---- 4. gnuplot data: one block per group in legend order, x shifted per group ----
# blocks FILE STATS SHIFT_OCTAVES: block i holds "x_shifted median min max" rows.
blocks() {
	local stats_file=$1 shift=$2
	awk -F'\t' -v shift="$shift" '
	NR == FNR { idx[$0] = FNR - 1; nv = FNR; next }
	{ line[$1] = line[$1] sprintf("%s\t%s\t%s\t%s\n", $2, $3, $4, $5) }
	END {
		for (g in idx) pos[idx[g]] = g
		for (i = 0; i < nv; i++) {
			f = 2 ^ ((i - (nv - 1) / 2) * shift)
			m = split(line[pos[i]], rows, "\n")
			for (k = 1; k <= m; k++) {
				if (rows[k] == "") continue
				split(rows[k], c, "\t")
				printf "%.6g\t%s\t%s\t%s\n", c[1] * f, c[2], c[3], c[4]
			}
			printf "\n\n"
		}
	}' "$tmp/order" "$stats_file" > "$tmp/$(basename "$stats_file" .tsv).dat"
}

# The plot command: one "index i ... title" clause per group, linetypes from the palette.
plot_clauses() {
	local dat=$1 i=0 g sep=
	while IFS= read -r g; do
		printf '%s"%s" index %d using 1:2:3:4 with yerrorlines linestyle %d title "%s"' \
			"$sep" "$dat" "$i" $((i % 12 + 1)) "$(label_of "$g")"
		sep=", "
		i=$((i + 1))
	done < "$tmp/order"
}

preamble() { # terminal, palette, common look
	cat <<-'EOF'
	set encoding utf8
	set terminal pngcairo size 1100,680 enhanced font "DejaVu Sans,11" linewidth 1.3
	set grid xtics ytics mxtics lc rgb "#dddddd" lw 1
	set border lc rgb "#444444"
	set key outside right top vertical noenhanced box lc rgb "#bbbbbb" spacing 1.15
	set bars small
	set style line 1  lc rgb "#1f77b4" pt 7  ps 0.9
	set style line 2  lc rgb "#ff7f0e" pt 5  ps 0.9
	set style line 3  lc rgb "#2ca02c" pt 9  ps 1.0
	set style line 4  lc rgb "#d62728" pt 11 ps 1.0
	set style line 5  lc rgb "#9467bd" pt 13 ps 1.0
	set style line 6  lc rgb "#8c564b" pt 4  ps 0.9
	set style line 7  lc rgb "#e377c2" pt 6  ps 0.9
	set style line 8  lc rgb "#555555" pt 8  ps 0.9
	set style line 9  lc rgb "#bcbd22" pt 10 ps 0.9
	set style line 10 lc rgb "#17becf" pt 12 ps 0.9
	set style line 11 lc rgb "#000000" pt 1  ps 1.0 dt 2
	set style line 12 lc rgb "#7f7f00" pt 2  ps 1.0 dt 2
	EOF
}

# x range: the data's x values with a third of an octave of margin (the shifted points fit).
xrange() {
	awk -F'\t' 'NR == 1 || $2 < lo { lo = $2 } NR == 1 || $2 > hi { hi = $2 }
		END { printf "set xrange [%.6g:%.6g]\n", lo / 2 ^ 0.33, hi * 2 ^ 0.33 }' "$tmp/time.tsv"
}
ytime() { # y axis of a time plot: from 0, or logarithmic with -L
	if [ "$logy" = 1 ]; then
		printf 'set logscale y 10\nset ylabel "%s (log scale)"\n' "$1"
	else
		printf 'set yrange [0:*]\nset ylabel "%s"\n' "$1"
	fi
}

title_note() { [ -n "$note" ] && printf '\\n{/*0.85 %s}' "$note"; return 0; }

run_gnuplot() { # script file, png
	if ! gnuplot "$1" 2> "$tmp/gp.err"; then
		echo "$prog: gnuplot failed for $2:" >&2
		cat "$tmp/gp.err" >&2
		exit 1
	fi
	[ -s "$tmp/gp.err" ] && cat "$tmp/gp.err" >&2
	echo "$prog: wrote $2" >&2
}

nvar=$(wc -l < "$tmp/order")
if [ "$kind" = vector ]; then
	blocks "$tmp/time.tsv" 0.02
	blocks "$tmp/mem.tsv" 0.02
	reps=$(awk -F'\t' '{ if ($6 > m) m = $6 } END { print m }' "$tmp/time.tsv")
	png_t="$outdir/$name-vector-time.png"
	png_m="$outdir/$name-vector-memory.png"
	{
		preamble
		cat <<-EOF
		set output "$png_t"
		set title "rwbench vector: time per push, median of $reps repetitions, bars = min–max$(title_note)"
		set xlabel "number of uint64 elements pushed (log_2 scale)"
		set logscale x 2
		set format x "2^{%L}"
		EOF
		xrange
		ytime "ns per push"
		printf 'plot %s\n' "$(plot_clauses "$tmp/time.dat")"
	} > "$tmp/time.gp"
	run_gnuplot "$tmp/time.gp" "$png_t"
	{
		preamble
		cat <<-EOF
		set output "$png_m"
		set title "rwbench vector: peak memory / data size (8 bytes x elements), median of $reps, bars = min–max$(title_note)"
		set xlabel "number of uint64 elements pushed (log_2 scale)"
		set ylabel "peak memory / data size"
		set logscale x 2
		set format x "2^{%L}"
		set yrange [0:*]
		set offsets 0, 0, graph 0.05, 0
		set arrow from graph 0, first 1 to graph 1, first 1 nohead lc rgb "#888888" dt 3
		set label "data size" at graph 0.01, first 1 offset 0, 0.6 tc rgb "#888888" font ",9"
		EOF
		xrange
		printf 'plot %s\n' "$(plot_clauses "$tmp/mem.dat")"
	} > "$tmp/mem.gp"
	run_gnuplot "$tmp/mem.gp" "$png_m"
	if [ "$quiet" = 0 ]; then
		printf 'metric\tvariant\tn\tmedian\tmin\tmax\tcount\n'
		sed 's/^/ns_per_push\t/' "$tmp/time.tsv"
		sed 's/^/peak_over_data\t/' "$tmp/mem.tsv"
	fi
else
	blocks "$tmp/time.tsv" 0.03
	reps=$(awk -F'\t' '{ if ($6 > m) m = $6 } END { print m }' "$tmp/time.tsv")
	keys=$(awk -v n="$nkeys" 'BEGIN { l = log(n) / log(2); if (l == int(l)) printf "2^{%d}", l; else printf "%d", n }')
	ppbtxt=
	if [ "$nppb" -eq 1 ]; then
		if [ "$ppb1" = 1 ]; then ppbtxt=", blocks of 1 page"; else ppbtxt=", blocks of $ppb1 pages"; fi
	fi
	png_p="$outdir/$name-partition.png"
	{
		preamble
		cat <<-EOF
		set output "$png_p"
		set title "rwbench partition: $keys random 64-bit keys$ppbtxt, median of $reps repetitions, bars = min–max$(title_note)"
		set xlabel "number of partitions P (log_2 scale)"
		set logscale x 2
		set format x "2^{%L}"
		EOF
		xrange
		ytime "ns per key"
		printf 'plot %s\n' "$(plot_clauses "$tmp/time.dat")"
	} > "$tmp/part.gp"
	run_gnuplot "$tmp/part.gp" "$png_p"
	if [ "$quiet" = 0 ]; then
		printf 'metric\tvariant\tpartitions\tmedian\tmin\tmax\tcount\n'
		sed 's/^/ns_per_key\t/; s/\x1c/ ppb=/' "$tmp/time.tsv"
	fi
fi
[ "$nvar" -le 12 ] || echo "$prog: $nvar variants, more than the 12 line styles: styles repeat" >&2
exit 0
