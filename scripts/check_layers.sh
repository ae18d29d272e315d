#!/bin/sh
# check_layers.sh — check that every #include follows the module layers of the
# build, and that docs/DESIGN.md shows those layers.
#
#   scripts/check_layers.sh             check includes and the diagram (exit 1 on a violation)
#   scripts/check_layers.sh --diagram   print the layer diagram
#   scripts/check_layers.sh --fix-doc   write the diagram into docs/DESIGN.md
#
# The layers are the ruma_module(<name> <folder> [<dep>...] [HEADERS <h>...])
# calls of CMakeLists.txt, read here and nowhere else copied: lowest layer
# first, a module depends on the modules it names and on everything those
# depend on.  A file of module M (any .c/.h under its folder) may include
#   "<x>/..."        a header of src/<x> (module folder without "src/"),
#   "bench/<x>/..."  a header of bench/<x>,
#   <ruma/h.h>       a public header, owned by the module whose HEADERS list it,
#   "rel/path.h"     a file found relative to the including file,
# only when that header's module is M or one M depends on.  Code outside src/
# (bench/, tools/, examples/) includes of a library module only its _ext.h
# tier (src/<module>/*_ext.h, the contracts not installed) and otherwise
# <ruma/*.h>, never an internal header; tools/ outside a module and
# examples/ are checked for that alone.  Test programs
# tests/test_<m>*.c are checked against module <m> (plus core and os, which
# the test harness uses), fuzz harnesses against the module of their
# ruma_fuzzer(<harness> <module>) call.  Other includes (<stdio.h>, the
# tests' and tools' own headers) are not checked.  The build enforces the
# same rule (each module compiles against an include root holding only what
# it may see); this check names file, line and include, and also sees
# relative includes and the parts the build does not compile.
#
# The diagram is the block between "<!-- layers:begin -->" and
# "<!-- layers:end -->" in docs/DESIGN.md.  POSIX sh and awk only.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mode=check
case "${1:-}" in
'') ;;
--diagram) mode=diagram ;;
--fix-doc) mode=fixdoc ;;
*)
	echo "usage: scripts/check_layers.sh [--diagram | --fix-doc]" >&2
	exit 2
	;;
esac

doc=docs/DESIGN.md
tmp=$(mktemp -d /tmp/ruma-layers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
find src bench include tests fuzz tools examples -type f \( -name '*.c' -o -name '*.h' \) | sort >"$tmp/files"

# layers.awk: reads CMakeLists.txt, then the file list, then (mode check) the
# sources to check.  Prints the diagram (mode diagram) or the violations.
cat >"$tmp/layers.awk" <<'AWK'
function fail(msg) { print "check_layers: " msg > "/dev/stderr"; bad = 1 }

# Collect one ruma_module()/ruma_fuzzer() call, which may span lines.
function take_call(line) {
	call = call " " line
	if (index(line, ")") == 0)
		return 0
	sub(/#.*$/, "", call)
	gsub(/[()]/, " ", call)
	n = split(call, w, /[ \t]+/)
	k = 0
	for (i = 1; i <= n; i++)
		if (w[i] != "")
			word[++k] = w[i]
	nword = k
	call = ""
	return 1
}

function add_module(   i, d, j, n, inhead, name, p, below) {
	name = word[2]
	nmod++
	mod[nmod] = name
	index_of[name] = nmod
	dir[name] = word[3]
	deps[name] = ""
	closure[name] = ""
	heads[name] = ""
	level[name] = 0
	inhead = 0
	for (i = 4; i <= nword; i++) {
		d = word[i]
		if (d == "HEADERS") { inhead = 1; continue }
		if (inhead) {
			heads[name] = heads[name] " " d
			owner[d] = name
			continue
		}
		if (!(d in index_of)) {
			fail("CMakeLists.txt: module " name " depends on '" d "', not a module declared above it")
			continue
		}
		deps[name] = deps[name] " " d
		if (level[d] + 1 > level[name])
			level[name] = level[d] + 1
		n = split(closure[d], below, " ")
		for (j = 1; j <= n; j++)
			sees[name, below[j]] = 1
	}
	sees[name, name] = 1
	for (i = 1; i <= nmod; i++)
		if ((name, mod[i]) in sees)
			closure[name] = closure[name] " " mod[i]
	if (level[name] > maxlevel)
		maxlevel = level[name]
	if (dir[name] ~ /^src\//) {
		p = dir[name]; sub(/^src\//, "", p)
	} else
		p = dir[name]
	prefix_owner[p] = name
}

function seen_list(m,   i, s) {
	s = ""
	for (i = 1; i <= nmod; i++)
		if ((m, mod[i]) in sees)
			s = s " " mod[i]
	return substr(s, 2)
}

function diagram(   l, i, m, line, d) {
	print "level  folder          module        depends on       owns include/ruma/"
	for (l = maxlevel; l >= 0; l--)
		for (i = 1; i <= nmod; i++) {
			m = mod[i]
			if (level[m] != l)
				continue
			d = substr(deps[m], 2)
			line = sprintf("%-6d %-15s %-13s %-16s %s", l, dir[m], m, d, substr(heads[m], 2))
			sub(/ +$/, "", line)
			print line
		}
}

# Normalise a path: drop "." parts, resolve ".." against the parts before it.
function normalise(path,   n, parts, out, k, i) {
	n = split(path, parts, "/")
	k = 0
	for (i = 1; i <= n; i++) {
		if (parts[i] == "" || parts[i] == ".")
			continue
		if (parts[i] == "..") {
			if (k > 0) k--
			else return ""
			continue
		}
		out[++k] = parts[i]
	}
	path = ""
	for (i = 1; i <= k; i++)
		path = path (i > 1 ? "/" : "") out[i]
	return path
}

# The module a repository path belongs to ("" when none): longest folder.
function module_of_path(path,   i, m, best, bl) {
	best = ""; bl = 0
	for (i = 1; i <= nmod; i++) {
		m = mod[i]
		if (index(path, dir[m] "/") == 1 && length(dir[m]) > bl) {
			best = m; bl = length(dir[m])
		}
	}
	return best
}

# The module whose header an include names, "" if it names no module's header,
# "-" if it is not checked (a system header or a local file outside modules).
function module_of_include(file, inc, angle,   here, rel, p, best) {
	if (angle) {
		if (inc !~ /^ruma\//)
			return "-"
		p = substr(inc, 6)
		if (p in owner)
			return owner[p]
		return ""
	}
	here = file; sub(/\/[^\/]*$/, "", here)
	rel = normalise(here "/" inc)
	if (rel != "" && (rel in exists)) {
		p = module_of_path(rel)
		return p != "" ? p : "-"
	}
	# the longest module prefix ("bm", "bench/rewire") the include starts with
	best = ""
	for (p in prefix_owner)
		if (index(inc, p "/") == 1 && length(p) > length(best))
			best = p
	return best != "" ? prefix_owner[best] : ""
}

function check_line(file, lineno, text,   inc, angle, target, m) {
	m = checked_as[file]
	if (text ~ /^[ \t]*#[ \t]*include[ \t]*</) {
		inc = text; sub(/^[ \t]*#[ \t]*include[ \t]*</, "", inc); sub(/>.*$/, "", inc)
		angle = 1
	} else {
		inc = text; sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", inc); sub(/".*$/, "", inc)
		angle = 0
	}
	target = module_of_include(file, inc, angle)
	if (target == "-")
		return
	shown = angle ? "<" inc ">" : "\"" inc "\""
	if (target == "") {
		if (angle)
			fail(file ":" lineno ": #include " shown ": include/ruma/" substr(inc, 6) \
			     " is owned by no module (HEADERS of a ruma_module() call in CMakeLists.txt)")
		else if (file_in_module[file])
			fail(file ":" lineno ": #include " shown ": names no header of any module")
		return
	}
	if (file ~ /^examples\// && !angle)
		fail(file ":" lineno ": #include " shown ": the examples build against the installed " \
		     "headers alone (<ruma/*.h>)")
	else if (file !~ /^src\// && dir[target] ~ /^src\// && !angle && !white_box[file] &&
	    inc !~ /(^|\/)[a-z0-9_]+_ext\.h$/)
		fail(file ":" lineno ": #include " shown ": code outside src/ includes <ruma/*.h>, its own " \
		     "headers and the _ext.h tier (src/<module>/*_ext.h), not a module's internal header")
	if (m == "*")
		return
	if (!((m, target) in sees) && !(extra_ok[file] && (target == "core" || target == "os")))
		fail(file ":" lineno ": #include " shown ": module " m " may not include a header of module " \
		     target " (it is not below " m " in CMakeLists.txt; " m " sees: " seen_list(m) ")")
}

FILENAME == cmake {
	if (call == "" && $0 !~ /^[ \t]*ruma_(module|fuzzer)[ \t]*\(/)
		next
	if (!take_call($0))
		next
	if (word[1] == "ruma_module")
		add_module()
	else
		fuzzer_of[word[2]] = word[3]
	next
}

FILENAME == filelist {
	exists[$0] = 1
	m = module_of_path($0)
	if (m != "") {
		checked_as[$0] = m
		file_in_module[$0] = 1
	} else if ($0 ~ /^tests\/test_[a-z0-9]+[^\/]*\.c$/) {
		t = $0; sub(/^tests\/test_/, "", t); sub(/[^a-z0-9].*$/, "", t)
		if (t in index_of) {
			checked_as[$0] = t
			extra_ok[$0] = 1
		}
		white_box[$0] = 1
	} else if ($0 ~ /^fuzz\/[^\/]*\.c$/) {
		t = $0; sub(/^fuzz\//, "", t); sub(/\.c$/, "", t)
		if ((t in fuzzer_of) && (fuzzer_of[t] in index_of))
			checked_as[$0] = fuzzer_of[t]
		white_box[$0] = 1
	} else if ($0 ~ /^(tools|examples)\//)
		checked_as[$0] = "*" # the ruma binary and the examples: encapsulation only
	next
}

{
	if (!(FILENAME in checked_as))
		next
	if ($0 ~ /^[ \t]*#[ \t]*include[ \t]*[<"]/)
		check_line(FILENAME, FNR, $0)
}

END {
	if (nmod == 0)
		fail("no ruma_module() calls found in " cmake)
	if (mode == "diagram")
		diagram()
	else if (mode == "check") {
		for (f in exists)
			if (f ~ /^include\/ruma\/[^\/]*\.h$/ && !(substr(f, 14) in owner))
				fail(f ": owned by no module (HEADERS of a ruma_module() call in CMakeLists.txt)")
	}
	exit bad
}
AWK

run_awk() { # mode, files to check...
	m=$1
	shift
	awk -v mode="$m" -v cmake=CMakeLists.txt -v filelist="$tmp/files" -f "$tmp/layers.awk" \
		CMakeLists.txt "$tmp/files" "$@"
}

if [ "$mode" = diagram ]; then
	run_awk diagram
	exit 0
fi

run_awk diagram >"$tmp/diagram"
begin='<!-- layers:begin (scripts/check_layers.sh --fix-doc writes this block) -->'
end='<!-- layers:end -->'
if [ "$mode" = fixdoc ]; then
	if ! grep -qxF "$begin" "$doc" || ! grep -qxF "$end" "$doc"; then
		echo "check_layers: $doc has no line '$begin' and '$end' to write between" >&2
		exit 1
	fi
	awk -v b="$begin" -v e="$end" -v d="$tmp/diagram" '
		$0 == b { print; print "```"; while ((getline l < d) > 0) print l; print "```"; skip = 1; next }
		$0 == e { skip = 0 }
		!skip' "$doc" >"$tmp/doc"
	cat "$tmp/doc" >"$doc"
	echo "check_layers: wrote the diagram into $doc"
	exit 0
fi

status=0
# shellcheck disable=SC2046
run_awk check $(cat "$tmp/files") || status=1

awk -v b="$begin" -v e="$end" '
	$0 == e { inside = 0 }
	inside && !/^```$/ { print }
	$0 == b { inside = 1 }' "$doc" >"$tmp/doc-diagram"
if ! cmp -s "$tmp/diagram" "$tmp/doc-diagram"; then
	echo "check_layers: the layer diagram in $doc (between its layers:begin/end markers) differs" \
		"from CMakeLists.txt; run scripts/check_layers.sh --fix-doc:" >&2
	diff -u "$tmp/doc-diagram" "$tmp/diagram" | sed 's/^/  /' >&2 || true
	status=1
fi
[ $status = 0 ] && echo "check_layers: includes follow the layers of CMakeLists.txt; $doc's diagram matches"
exit $status
