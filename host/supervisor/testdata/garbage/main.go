// Command garbage prints something other than a go-plugin handshake, for
// the supervisor's handshake-failure test.
package main

import "fmt"

func main() {
	fmt.Println("hello, I am not a plugin")
}
