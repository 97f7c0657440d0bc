package logs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// NewJSON returns a logger writing kube's json format to w: one object
// per line with ts (seconds since the epoch), caller (file:line), msg,
// v (the verbosity; absent for errors) or err, then the logger's values
// and the call's. Verbosity is klog's: a V(n) call logs when -v is at
// least n.
func NewJSON(w io.Writer) logr.Logger {
	return logr.New(&jsonSink{out: &syncWriter{w: w}})
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) write(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.w.Write(b)
}

type jsonSink struct {
	out    *syncWriter
	depth  int
	name   string
	values []interface{}
}

var _ logr.CallDepthLogSink = &jsonSink{}

func (s *jsonSink) Init(info logr.RuntimeInfo) { s.depth += info.CallDepth }

func (s *jsonSink) Enabled(level int) bool { return klog.V(klog.Level(level)).Enabled() }

func (s *jsonSink) Info(level int, msg string, kv ...interface{}) {
	s.write(msg, nil, level, kv)
}

func (s *jsonSink) Error(err error, msg string, kv ...interface{}) {
	s.write(msg, err, -1, kv)
}

func (s *jsonSink) WithValues(kv ...interface{}) logr.LogSink {
	c := *s
	c.values = append(append([]interface{}{}, s.values...), kv...)
	return &c
}

func (s *jsonSink) WithName(name string) logr.LogSink {
	c := *s
	if c.name != "" {
		name = c.name + "." + name
	}
	c.name = name
	return &c
}

func (s *jsonSink) WithCallDepth(depth int) logr.LogSink {
	c := *s
	c.depth += depth
	return &c
}

// write is called by Info or Error, which logr.Logger's methods call:
// the caller is two frames above them.
func (s *jsonSink) write(msg string, err error, level int, kv []interface{}) {
	var b bytes.Buffer
	b.WriteString(`{"ts":`)
	b.WriteString(strconv.FormatFloat(float64(time.Now().UnixNano())/1e9, 'f', 6, 64))
	if _, file, line, ok := runtime.Caller(s.depth + 2); ok {
		b.WriteString(`,"caller":`)
		writeValue(&b, filepath.Base(file)+":"+strconv.Itoa(line))
	}
	if s.name != "" {
		b.WriteString(`,"logger":`)
		writeValue(&b, s.name)
	}
	b.WriteString(`,"msg":`)
	writeValue(&b, msg)
	if err != nil {
		b.WriteString(`,"err":`)
		writeValue(&b, err.Error())
	}
	if level >= 0 {
		b.WriteString(`,"v":`)
		b.WriteString(strconv.Itoa(level))
	}
	writePairs(&b, s.values)
	writePairs(&b, kv)
	b.WriteString("}\n")
	s.out.write(b.Bytes())
}

func writePairs(b *bytes.Buffer, kv []interface{}) {
	for i := 0; i < len(kv); i += 2 {
		b.WriteByte(',')
		writeValue(b, fmt.Sprint(kv[i]))
		b.WriteByte(':')
		if i+1 < len(kv) {
			writeValue(b, kv[i+1])
		} else {
			b.WriteString(`"(MISSING)"`)
		}
	}
}

// writeValue writes v as JSON: errors as their text, values that know
// how to log themselves (klog.KObj) as what they return, anything JSON
// cannot encode as its %+v text.
func writeValue(b *bytes.Buffer, v interface{}) {
	switch x := v.(type) {
	case error:
		v = x.Error()
	case logr.Marshaler:
		v = x.MarshalLog()
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		out.Reset()
		_ = enc.Encode(fmt.Sprintf("%+v", v))
	}
	b.Write(bytes.TrimSuffix(out.Bytes(), []byte("\n")))
}
