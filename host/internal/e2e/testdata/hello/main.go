// Command hello is the extra binary TestBuildBinaries builds.
package main

func main() {}
