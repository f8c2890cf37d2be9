#!/usr/bin/env bash
# Writes the King James Bible as plain text for training a tokenizer and a
# model: OUTDIR/kjv-train.txt and OUTDIR/kjv-valid.txt.
#
#   scripts/corpus.sh build/corpus
#
# The text comes from Debian's bible-kjv (scripts/deps.sh installs it), whose
# `bible -f` prints one verse per line after its reference ("Ge1:1 In the
# beginning God created the heaven and the earth."). The format written:
#
#   - one verse per line, its reference removed, runs of spaces squeezed to
#     one and trailing spaces dropped (three verses have stray double or
#     trailing spaces in the source);
#   - no headings: a chapter starts after one blank line, a book after two
#     (so "\n\n" opens a chapter and "\n\n\n" a book); the file starts with
#     the first verse and ends with the last verse's newline;
#   - ASCII only, as the source is.
#
# Ruth, Jonah and Jude (158 verses, 23 KB: a short narrative, a short
# prophet and a short epistle) are the validation set, kjv-valid.txt, in
# canonical order; they never appear in kjv-train.txt, which holds the other
# 63 books (30944 verses, 4.1 MB). Perplexity measured on kjv-valid.txt
# is therefore on text the model never saw. The output is the same bytes on
# every run, and takes well under a second.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: scripts/corpus.sh OUTDIR" >&2
	exit 2
fi
out=$1
if ! command -v bible >/dev/null 2>&1; then
	echo "corpus: the 'bible' command is missing: install Debian's bible-kjv (scripts/deps.sh does)" >&2
	exit 1
fi
mkdir -p "$out"
tmp=$(mktemp -d "$out/.corpus.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# -f turns pretty-printing off: one verse per line with its reference, no
# line wrapping. Standard input from /dev/null keeps bible from waiting for
# interactive commands after printing.
bible -f "Gen1:1-Rev22:21" </dev/null >"$tmp/kjv.txt"

# A reference is BOOK CHAPTER:VERSE with no spaces ("1Chr10:3", "Psa119:1").
# The validation books, as bible abbreviates them, are Ruth, Jonah and Jude.
LC_ALL=C awk -v train="$tmp/kjv-train.txt" -v valid="$tmp/kjv-valid.txt" -v stats="$tmp/stats" '
BEGIN { heldout["Ruth"] = 1; heldout["Jonah"] = 1; heldout["Jude"] = 1 }
{
	sp = index($0, " ")
	ref = substr($0, 1, sp - 1)
	if (sp < 2 || ref !~ /^[1-3]?[A-Za-z]+[0-9]+:[0-9]+$/) {
		printf "corpus: bible printed an unexpected line %d: %s\n", NR, $0 > "/dev/stderr"
		bad = 1
		exit 1
	}
	book = ref; sub(/[0-9]+:[0-9]+$/, "", book)
	cv = substr(ref, length(book) + 1); split(cv, p, ":"); chapter = p[1]
	text = substr($0, sp + 1)
	gsub(/  +/, " ", text); sub(/ +$/, "", text)
	f = (book in heldout) ? valid : train
	if (book != lastbook[f]) {
		if (lastbook[f] != "") printf "\n\n" > f
		lastbook[f] = book; lastchapter[f] = chapter
		books[f]++
	} else if (chapter != lastchapter[f]) {
		printf "\n" > f
		lastchapter[f] = chapter
	}
	print text > f
	verses[f]++
}
END {
	if (bad) exit 1
	printf "%d %d %d %d\n", books[train], verses[train], books[valid], verses[valid] > stats
}' "$tmp/kjv.txt"

# The KJV has 66 books and 31102 verses; Ruth, Jonah and Jude have 85 + 48 + 25.
read -r tbooks tverses vbooks vverses <"$tmp/stats"
if [ "$tbooks $tverses $vbooks $vverses" != "63 30944 3 158" ]; then
	echo "corpus: expected 63 books (30944 verses) for training and 3 (158) for validation, got $tbooks ($tverses) and $vbooks ($vverses): is bible-kjv complete?" >&2
	exit 1
fi
mv "$tmp/kjv-train.txt" "$out/kjv-train.txt"
mv "$tmp/kjv-valid.txt" "$out/kjv-valid.txt"
echo "corpus: wrote $out/kjv-train.txt ($(wc -c <"$out/kjv-train.txt") bytes, $tbooks books) and $out/kjv-valid.txt ($(wc -c <"$out/kjv-valid.txt") bytes: Ruth, Jonah, Jude)" >&2
