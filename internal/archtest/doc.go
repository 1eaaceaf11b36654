// Package archtest holds no code, only the test that keeps the import arrows of DESIGN.md §2:
// it parses every Go file of the module and fails on an import the design forbids, so a
// misplaced dependency is caught when it is written, not at the next re-layout.
package archtest
