module github.com/bitvk/bitvk

go 1.26.0

require (
	github.com/chzyer/readline v1.5.1
	github.com/creack/pty v1.1.24
	golang.org/x/sys v0.49.0
)

require github.com/vulkan-go/vulkan v0.0.0-20221209234627-c0a353ae26c8 // indirect
