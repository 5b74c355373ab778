package app

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/wakeonchat/wakeonchat/host/config"
	"github.com/wakeonchat/wakeonchat/host/openai"
	"github.com/wakeonchat/wakeonchat/host/supervisor"
	"github.com/wakeonchat/wakeonchat/machines"
)

// Check is what `wakehost check` runs: what New would refuse to start for,
// found without opening anything (no store, no listener, no plugin process,
// no simulator) and without writing anything. It loads and validates the
// config at o.ConfigPath (with o.Listen and o.PluginDir applied, as New
// applies them), resolves every plugin to its file in plugins.dir or to a
// built-in in o.Executable and checks that it is an executable file,
// builds the wake policy from the reply templates and the door's
// recognizer of them, and checks that the variables a start needs are set
// (o.Getenv; nil is os.Getenv): a RunPod backend's API key, and for the
// postgres store the connection string.
//
// It returns a one-line summary when there is no problem (with the
// default shutdown grace, which a service manager's stop timeout must
// exceed), else every
// problem found: the config's own (*config.Error, with file and line where
// the decoder gives them; loading stops there) or, past them, one per
// plugin, template or variable, naming the key.
func Check(o Options) (string, []error) {
	o.environment()
	cfg, err := config.Load(o.ConfigPath)
	if err != nil {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			return "", j.Unwrap()
		}
		return "", []error{err}
	}
	if o.Listen != "" {
		cfg.Server.Listen = o.Listen
	}
	if o.PluginDir != "" {
		cfg.Plugins.Dir = o.PluginDir
	}
	var problems []error
	add := func(key string, err error) {
		problems = append(problems, &config.Error{File: cfg.Path, Key: key, Err: err})
	}

	// The plugins, each once per key that names it.
	var plugins []string
	checkPlugin := func(key, name string) {
		path, _, builtin := pluginCommand(cfg, name, o.Executable)
		if err := supervisor.CheckExecutable(name, path); err != nil {
			add(key, err)
			return
		}
		from := "from " + path
		if builtin {
			from = "built in"
		}
		if p := name + " " + from; !slices.Contains(plugins, p) {
			plugins = append(plugins, p)
		}
	}
	// Each GPU backend's plugin, and the RunPod API key each needs.
	for _, b := range cfg.GPUBackends() {
		checkPlugin(b.Table+".plugin", b.Plugin)
		var ce *config.Error
		if err := runPodKeySet(b, o.Getenv); errors.As(err, &ce) {
			ce.File = cfg.Path
			problems = append(problems, ce)
		}
	}
	var podNames []string
	for i, p := range cfg.Providers {
		checkPlugin(fmt.Sprintf("providers[%d].plugin", i), p.Plugin)
		if p.Pod != "" && !slices.Contains(podNames, p.Pod) {
			podNames = append(podNames, p.Pod)
		}
	}

	// The reply templates, as New builds from them.
	if policy, err := cfg.MachinePolicy(); err != nil {
		problems = append(problems, err)
	} else if _, err := machines.NewPod(policy); err != nil {
		add("replies", err)
	}
	if _, err := openai.NewRecognizer(cfg.Replies); err != nil {
		add("replies", err)
	}

	// The store.
	store := cfg.Store.Backend
	if store == config.BackendPostgres {
		if _, err := postgresDSN(cfg, o.LookupEnv); err != nil {
			problems = append(problems, err)
		}
	} else {
		if info, err := os.Stat(cfg.DataDir()); err == nil && !info.IsDir() {
			add("server.data_dir", errors.New(cfg.DataDir()+" is not a directory"))
		}
		store += " in " + cfg.DataDir()
	}

	if len(problems) > 0 {
		return "", problems
	}
	pods := count(len(podNames), "pod")
	if len(cfg.Backends) > 0 {
		pods += ", " + count(len(cfg.GPUBackends()), "GPU backend")
	}
	return fmt.Sprintf("%s: ok (%s, %s, store %s, plugins: %s, shutdown grace %v)", o.ConfigPath,
		count(len(cfg.Providers), "provider"), pods, store, strings.Join(plugins, ", "), shutdownGrace(cfg)), nil
}

// count is n and noun, plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// postgresDSN is the PostgreSQL connection string from the variable
// [store] dsn_env names; its error names the variable, never a value.
func postgresDSN(cfg config.Config, lookupEnv func(string) (string, bool)) (string, error) {
	env := cfg.Store.DSNEnv
	dsn, set := lookupEnv(env)
	switch {
	case !set:
		return "", fmt.Errorf("store.dsn_env: %s is not set: [store] backend = %q reads its connection string there", env, config.BackendPostgres)
	case dsn == "":
		return "", fmt.Errorf("store.dsn_env: %s is empty: [store] backend = %q reads its connection string there", env, config.BackendPostgres)
	}
	return dsn, nil
}
