// Command rlsim simulates rate limiters against scripted, generated and recorded traffic in
// virtual time. See README.md.
package main

import (
	"os"

	"github.com/rlsim/rlsim/cmd"
)

func main() { os.Exit(cmd.Execute()) }
