package scenario

import "errors"

// ErrUnknownScenario is wrapped by Load for a name that is neither a built-in scenario
// nor a file: a mistake of the command line, not of a scenario.
var ErrUnknownScenario = errors.New("no built-in scenario of that name (see `rlsim scenarios list`) and no such file")
