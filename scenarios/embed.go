// Package scenarios embeds rlsim's built-in scenario files. Each *.yaml file here is one
// scenario, named after the file.
package scenarios

import "embed"

// FS holds the built-in scenario files.
//
//go:embed *.yaml
var FS embed.FS
