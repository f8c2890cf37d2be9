module github.com/bitvk/bitvk

go 1.26
