package upstream

import (
	"errors"
	"net/http"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"
)

// ErrNoAPIServer is the error of every request of ClientBuilder's clients,
// wrapped in the *url.Error client-go reports.
var ErrNoAPIServer = errors.New("wasm-ccm: a provider in the sandbox has no access to the Kubernetes API server")

// apiServer is the host of ClientBuilder's configurations, which no request
// reaches.
const apiServer = "https://kubernetes-api-server.invalid"

// ClientBuilder is the ControllerClientBuilder Serve passes to the
// provider's Initialize: the sandbox gives a provider no access to the
// API server, so its configurations are valid but send through a transport
// that fails every request with ErrNoAPIServer, and its clients are
// client-go's over them. None of its methods fails or panics.
type ClientBuilder struct{}

var _ cloudprovider.ControllerClientBuilder = ClientBuilder{}

// Config is a configuration for the controller name whose requests fail.
func (ClientBuilder) Config(name string) (*rest.Config, error) {
	return &rest.Config{Host: apiServer, UserAgent: name, Transport: noAPIServer{}}, nil
}

// ConfigOrDie is Config's configuration.
func (b ClientBuilder) ConfigOrDie(name string) *rest.Config {
	config, _ := b.Config(name)
	return config
}

// Client is a clientset for the controller name whose requests fail.
func (b ClientBuilder) Client(name string) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(b.ConfigOrDie(name))
}

// ClientOrDie is Client's clientset; it panics if client-go rejects the
// configuration, which it does not.
func (b ClientBuilder) ClientOrDie(name string) kubernetes.Interface {
	client, err := b.Client(name)
	if err != nil {
		panic(err)
	}
	return client
}

// noAPIServer is the transport of ClientBuilder's configurations.
type noAPIServer struct{}

func (noAPIServer) RoundTrip(request *http.Request) (*http.Response, error) {
	if request.Body != nil {
		_ = request.Body.Close()
	}
	return nil, ErrNoAPIServer
}
