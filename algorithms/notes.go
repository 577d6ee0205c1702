package algorithms

import "slices"

// Variants are the design notes' own code, kept beside rlsim's corrected algorithms so a
// run can show what the notes' code does and what rlsim changed: notes-sliding-window
// (the notes' two-counter Lua script) and notes-token-bucket (the notes' consume). They
// are not in Names, so no run picks them unless asked for by name.
var Variants = []string{"notes-sliding-window", "notes-token-bucket"}

// Known reports whether name is an algorithm New builds: one of Names or of Variants.
func Known(name string) bool {
	return slices.Contains(Names, name) || slices.Contains(Variants, name)
}
