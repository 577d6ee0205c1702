package algorithms

// Variants lists the design notes' own code, kept beside rlsim's corrected algorithms so a
// run can show what the notes' code does and what rlsim changed: notes-sliding-window
// (the notes' two-counter Lua script) and notes-token-bucket (the notes' consume). They
// are in no default list, so no run picks them unless asked for by name.
func Variants() []string {
	return Select(func(k *Kind) bool { return k.Rank >= 100 && k.Rank < 200 })
}
