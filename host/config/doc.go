// Package config reads wake.toml, the operator's configuration of the
// wake-on-chat host. It is the one place that file is read: the rest of the
// host receives a [Config] value and never opens the file or looks at TOML.
//
// # Lifecycle
//
// A configuration is made once, at start-up, in three steps:
//
//  1. Defaults. [DefaultConfig] holds a working value for every key; each
//     field's comment states its default, and the committed wake.toml shows
//     every key with exactly that value (a test keeps the two equal).
//  2. Strict decoding. The file is decoded over the defaults, one value at
//     a time. A key Config does not have (a toml tag, or a reply key,
//     compared exactly, so a key that differs only in case is unknown), a
//     value of the wrong type and a malformed duration are errors, all of
//     them in the file's order, each naming the key and, when the decoder
//     records one, its line; malformed TOML is an error with the decoder's
//     line, column and message. A file's
//     [[providers]] tables replace the default provider; they are not merged
//     into it. Each [[backends]] table is decoded over the defaults of its
//     kind ([DefaultBackend]), and a key of another kind is an error.
//     [replies] entries override single replies, and the reply keys
//     are machines' own ([machines.ReplyKeys]): this package lists none.
//     Relative directories are then resolved against the directory the file
//     is in.
//  3. Validation. [Config.Validate] checks every value and every relationship
//     between values and reports all problems at once, each naming its key.
//     Reply texts are parsed and rendered here with
//     [machines.ParseReplies], so a typo in a template stops start-up.
//
// [Load] runs all three. A Config that
// came back without an error is valid and is not re-checked later.
//
// Errors are [*Error] values joined with [errors.Join], one per problem.
//
// # What it must not do
//
// It does no I/O beyond reading the one file it is given: it does not create
// the data or plugin directories, look for the plugins, contact the
// conductor or read the environment. It never logs; it returns errors and
// the caller reports them once.
//
// # Secrets
//
// wake.toml holds no secrets by design: a provider's API key stays in the
// environment, and api_key_env holds only the variable's name. Errors
// therefore may quote values from the file, except where a secret pasted
// in the wrong place would land: URLs, provider paths and api_key_env are
// never quoted back.
package config
