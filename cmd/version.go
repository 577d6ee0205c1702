package cmd

import "runtime/debug"

// versionString is what `rlsim --version` prints after the program's name, read from the
// build information the Go toolchain stamps into the binary: the module version ("v1.2.0"
// when installed from a tag, a pseudo-version when built in a git checkout, "(devel)"
// otherwise); when built in a git checkout, the commit, its time and whether the tree had
// uncommitted changes; and the Go version. For example:
//
//	v0.0.0-20261130120000-0123456789ab+dirty, commit 0123456789ab… of 2026-11-30T12:00:00Z with uncommitted changes, built with go1.26.8
func versionString(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "(devel)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var revision, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if revision != "" {
		v += ", commit " + revision
		if at != "" {
			v += " of " + at
		}
		if modified {
			v += " with uncommitted changes"
		}
	}
	if info.GoVersion != "" {
		v += ", built with " + info.GoVersion
	}
	return v
}

// buildVersion is versionString of this binary.
func buildVersion() string { return versionString(debug.ReadBuildInfo()) }
