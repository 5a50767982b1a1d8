//go:build tools

// Package tools pins the Pulumi YAML language host that toolchain/build builds (the end-to-end tests' YAML program
// that uses the component as a Pulumi package); pulumi-yaml resolves pulumi/pkg/v3 to the version it was released
// with.
package tools

import _ "github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml"
