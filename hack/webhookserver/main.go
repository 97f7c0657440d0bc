// Command webhookserver runs test/webhookserver for manual use: it
// prints its URL and its CA bundle (base64, for clientConfig.caBundle)
// and answers on /allow (allows, with a warning), /deny (refuses) and
// /label (adds the label webhook=seen) until interrupted.
package main

import (
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/cronplane/cronplane/test/webhookserver"
)

func main() {
	dir := flag.String("dir", os.TempDir()+"/cronplane-webhook", "directory for the generated CA and serving certificate")
	flag.Parse()
	srv, err := webhookserver.Start(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer srv.Close()
	srv.Always("/allow", webhookserver.Response{Warnings: []string{"seen by the allow webhook"}})
	srv.Always("/deny", webhookserver.Response{Deny: true, Message: "the deny webhook says no"})
	srv.Always("/label", webhookserver.Response{Patch: `[{"op":"add","path":"/metadata/labels","value":{"webhook":"seen"}}]`})
	fmt.Printf("URL=%s\nCA_BUNDLE=%s\n", srv.URL, base64.StdEncoding.EncodeToString(srv.CABundle))
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	<-stop
}
