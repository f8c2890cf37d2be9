// Package nn holds what every backend shares: the metadata keys and tensor
// names of BitNet GGUF files (in one place), and, as the engine grows, the
// typed model configuration, the Backend interface and the generation loop.
package nn
