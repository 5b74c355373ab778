// Command badhandshake is a plugin binary that fails the go-plugin
// handshake: it prints a line that is not a handshake and exits.
package main

import "fmt"

func main() {
	fmt.Println("hello, I am not a wake-on-chat plugin")
}
