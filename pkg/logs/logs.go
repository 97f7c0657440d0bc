// Package logs owns the binaries' one logger: klog, with its verbosity
// flags (-v, --vmodule) and kube's --logging-format, text (klog's own
// header lines) or json (one JSON object per line, as kube's json
// format: ts, caller, msg, v, then the key/value pairs). Code logs
// through klog's structured calls or a klog.Logger taken from its
// context; nothing logs through the standard library's log package.
package logs

import (
	"flag"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// Formats are the values --logging-format takes.
var Formats = []string{"text", "json"}

// Options are the logging flags of a binary.
type Options struct {
	// Format is "text" or "json".
	Format string
	klog   *flag.FlagSet
}

// NewOptions returns the defaults: text, verbosity 0.
func NewOptions() *Options {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	return &Options{Format: "text", klog: fs}
}

// AddFlags adds -v, --vmodule and --logging-format to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	for _, name := range []string{"v", "vmodule"} {
		f := pflag.PFlagFromGoFlag(o.klog.Lookup(name))
		fs.AddFlag(f)
	}
	fs.StringVar(&o.Format, "logging-format", o.Format, "log format: text (klog's header lines) or json (one object per line: ts, caller, msg, v and the values)")
}

// Apply checks the options and installs the logger. Text goes to
// standard error as klog writes it; json replaces klog's output with
// NewJSON's on standard error.
func (o *Options) Apply() error {
	switch o.Format {
	case "text":
		return nil
	case "json":
		klog.SetLogger(NewJSON(os.Stderr))
		return nil
	}
	return fmt.Errorf("--logging-format: %q is not one of %v", o.Format, Formats)
}
