// Package spec holds the drafters of speculative decoding: prompt lookup
// (continuations copied from earlier in the context) and chain buckets (a
// table of 256 token chains mined from a corpus, stored in the CHNB format).
// A drafter only guesses; nn.Engine verifies every guess in one batched
// forward pass and keeps exactly what plain decoding would have produced.
package spec
