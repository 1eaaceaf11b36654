// Package archtest holds no code, only the test that keeps the import arrows of DESIGN.md §2:
// it parses every non-test Go file of the module and fails on an import the drawing (one table
// of rooms and what each may import) does not allow or a never forbids, naming the file, so a
// misplaced dependency is caught when it is written.
package archtest
