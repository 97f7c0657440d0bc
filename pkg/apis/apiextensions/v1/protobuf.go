package v1

import "google.golang.org/protobuf/encoding/protowire"

// The protobuf form of the definition is kube's (the messages of
// k8s.io/apiextensions-apiserver's generated.proto for v1, same field
// numbers, same bytes): the metadata through k8s.io/apimachinery's
// generated code, the rest written here.

// Marshal returns the definition's protobuf bytes, without the envelope.
func (c *CustomResourceDefinition) Marshal() ([]byte, error) {
	e := &encoder{}
	c.encode(e)
	return e.b, e.err
}

// Unmarshal reads protobuf bytes into c, replacing what it held.
func (c *CustomResourceDefinition) Unmarshal(data []byte) error {
	*c = CustomResourceDefinition{}
	return c.decode(data)
}

// Marshal returns the list's protobuf bytes, without the envelope.
func (l *CustomResourceDefinitionList) Marshal() ([]byte, error) {
	e := &encoder{}
	e.marshaler(1, &l.ListMeta)
	for i := range l.Items {
		e.message(2, l.Items[i].encode)
	}
	return e.b, e.err
}

// Unmarshal reads protobuf bytes into l, replacing what it held.
func (l *CustomResourceDefinitionList) Unmarshal(data []byte) error {
	*l = CustomResourceDefinitionList{}
	return walk(data, func(f field) error {
		switch f.num {
		case 1:
			return f.unmarshal(&l.ListMeta)
		case 2:
			l.Items = append(l.Items, CustomResourceDefinition{})
			return f.message(l.Items[len(l.Items)-1].decode)
		}
		return nil
	})
}

func (c *CustomResourceDefinition) encode(e *encoder) {
	e.marshaler(1, &c.ObjectMeta)
	e.message(2, c.Spec.encode)
	e.message(3, c.Status.encode)
}

func (c *CustomResourceDefinition) decode(data []byte) error {
	return walk(data, func(f field) error {
		switch f.num {
		case 1:
			return f.unmarshal(&c.ObjectMeta)
		case 2:
			return f.message(c.Spec.decode)
		case 3:
			return f.message(c.Status.decode)
		}
		return nil
	})
}

func (s *CustomResourceDefinitionSpec) encode(e *encoder) {
	e.string(1, s.Group)
	e.message(3, s.Names.encode)
	e.string(4, string(s.Scope))
	for i := range s.Versions {
		e.message(7, s.Versions[i].encode)
	}
	if s.Conversion != nil {
		e.message(9, s.Conversion.encode)
	}
	e.bool(10, s.PreserveUnknownFields)
}

func (s *CustomResourceDefinitionSpec) decode(data []byte) error {
	return walk(data, func(f field) error {
		switch f.num {
		case 1:
			return f.string(&s.Group)
		case 3:
			return f.message(s.Names.decode)
		case 4:
			return f.string((*string)(&s.Scope))
		case 7:
			s.Versions = append(s.Versions, CustomResourceDefinitionVersion{})
			return f.message(s.Versions[len(s.Versions)-1].decode)
		case 9:
			if s.Conversion == nil {
				s.Conversion = &CustomResourceConversion{}
			}
			return f.message(s.Conversion.decode)
		case 10:
			return f.bool(&s.PreserveUnknownFields)
		}
		return nil
	})
}

func (n *CustomResourceDefinitionNames) encode(e *encoder) {
	e.string(1, n.Plural)
	e.string(2, n.Singular)
	e.strings(3, n.ShortNames)
	e.string(4, n.Kind)
	e.string(5, n.ListKind)
	e.strings(6, n.Categories)
}

func (n *CustomResourceDefinitionNames) decode(data []byte) error {
	return walk(data, func(f field) error {
		switch f.num {
		case 1:
			return f.string(&n.Plural)
		case 2:
			return f.string(&n.Singular)
		case 3:
			return f.appendString(&n.ShortNames)
		case 4:
			return f.string(&n.Kind)
		case 5:
			return f.string(&n.ListKind)
		case 6:
			return f.appendString(&n.Categories)
		}
		return nil
	})
}

func (v *CustomResourceDefinitionVersion) encode(e *encoder) {
	e.string(1, v.Name)
	e.bool(2, v.Served)
	e.bool(3, v.Storage)
	if v.Schema != nil {
		e.message(4, v.Schema.encode)
	}
	if v.Subresources != nil {
		e.message(5, v.Subresources.encode)
	}
	for i := range v.AdditionalPrinterColumns {
		e.message(6, v.AdditionalPrinterColumns[i].encode)
	}
	e.bool(7, v.Deprecated)
	e.optString(8, v.DeprecationWarning)
}

func (v *CustomResourceDefinitionVersion) decode(data []byte) error {
	return walk(data, func(f field) error {
		switch f.num {
		case 1:
			return f.string(&v.Name)
		case 2:
			return f.bool(&v.Served)
		case 3:
			return f.bool(&v.Storage)
		case 4:
			if v.Schema == nil {
				v.Schema = &CustomResourceValidation{}
			}
			return f.message(v.Schema.decode)
		case 5:
			if v.Subresources == nil {
				v.Subresources = &CustomResourceSubresources{}
			}
			return f.message(v.Subresources.decode)
		case 6:
			v.AdditionalPrinterColumns = append(v.AdditionalPrinterColumns, CustomResourceColumnDefinition{})
			return f.message(v.AdditionalPrinterColumns[len(v.AdditionalPrinterColumns)-1].decode)
		case 7:
			return f.bool(&v.Deprecated)
		case 8:
			return f.optString(&v.DeprecationWarning)
		}
		return nil
	})
}

func (v *CustomResourceValidation) encode(e *encoder) {
	if v.OpenAPIV3Schema != nil {
		e.message(1, func(e *encoder) { encodeSchema(e, v.OpenAPIV3Schema) })
	}
}

func (v *CustomResourceValidation) decode(data []byte) error {
	return walk(data, func(f field) error {
		if f.num != 1 {
			return nil
		}
		if v.OpenAPIV3Schema == nil {
			v.OpenAPIV3Schema = JSONSchemaProps{}
		}
		return f.message(func(b []byte) error { return decodeSchema(b, v.OpenAPIV3Schema) })
	})
}

func (s *CustomResourceSubresources) encode(e *encoder) {
	if s.Status != nil {
		e.message(1, func(*encoder) {})
	}
	if s.Scale != nil {
		e.message(2, s.Scale.encode)
	}
}

func (s *CustomResourceSubresources) decode(data []byte) error {
	return walk(data, func(f field) error {
		switch f.num {
		case 1:
			s.Status = &CustomResourceSubresourceStatus{}
			return f.want(protowire.BytesType)
		case 2:
			if s.Scale == nil {
				s.Scale = &CustomResourceSubresourceScale{}
			}
			return f.message(s.Scale.decode)
		}
		return nil
	})
}

func (s *CustomResourceSubresourceScale) encode(e *encoder) {
	e.string(1, s.SpecReplicasPath)
	e.string(2, s.StatusReplicasPath)
	e.optString(3, s.LabelSelectorPath)
}

func (s *CustomResourceSubresourceScale) decode(data []byte) error {
	return walk(data, func(f field) error {
		switch f.num {
		case 1:
			return f.string(&s.SpecReplicasPath)
		case 2:
			return f.string(&s.StatusReplicasPath)
		case 3:
			return f.optString(&s.LabelSelectorPath)
		}
		return nil
	})
}

func (c *CustomResourceColumnDefinition) encode(e *encoder) {
	e.string(1, c.Name)
	e.string(2, c.Type)
	e.string(3, c.Format)
	e.string(4, c.Description)
	e.int(5, int64(c.Priority))
	e.string(6, c.JSONPath)
}

func (c *CustomResourceColumnDefinition) decode(data []byte) error {
	return walk(data, func(f field) error {
		switch f.num {
		case 1:
			return f.string(&c.Name)
		case 2:
			return f.string(&c.Type)
		case 3:
			return f.string(&c.Format)
		case 4:
			return f.string(&c.Description)
		case 5:
			return f.int32(&c.Priority)
		case 6:
			return f.string(&c.JSONPath)
		}
		return nil
	})
}

func (c *CustomResourceConversion) encode(e *encoder) {
	e.string(1, string(c.Strategy))
	if c.Webhook != nil {
		e.message(2, c.Webhook.encode)
	}
}

func (c *CustomResourceConversion) decode(data []byte) error {
	return walk(data, func(f field) error {
		switch f.num {
		case 1:
			return f.string((*string)(&c.Strategy))
		case 2:
			if c.Webhook == nil {
				c.Webhook = &WebhookConversion{}
			}
			return f.message(c.Webhook.decode)
		}
		return nil
	})
}

func (w *WebhookConversion) encode(e *encoder) {
	if w.ClientConfig != nil {
		e.message(2, w.ClientConfig.encode)
	}
	e.strings(3, w.ConversionReviewVersions)
}

func (w *WebhookConversion) decode(data []byte) error {
	return walk(data, func(f field) error {
		switch f.num {
		case 2:
			if w.ClientConfig == nil {
				w.ClientConfig = &WebhookClientConfig{}
			}
			return f.message(w.ClientConfig.decode)
		case 3:
			return f.appendString(&w.ConversionReviewVersions)
		}
		return nil
	})
}

func (c *WebhookClientConfig) encode(e *encoder) {
	if c.Service != nil {
		e.message(1, c.Service.encode)
	}
	e.bytes(2, c.CABundle)
	e.optString(3, c.URL)
}

func (c *WebhookClientConfig) decode(data []byte) error {
	return walk(data, func(f field) error {
		switch f.num {
		case 1:
			if c.Service == nil {
				c.Service = &ServiceReference{}
			}
			return f.message(c.Service.decode)
		case 2:
			return f.bytes(&c.CABundle)
		case 3:
			return f.optString(&c.URL)
		}
		return nil
	})
}

func (s *ServiceReference) encode(e *encoder) {
	e.string(1, s.Namespace)
	e.string(2, s.Name)
	e.optString(3, s.Path)
	if s.Port != nil {
		e.int(4, int64(*s.Port))
	}
}

func (s *ServiceReference) decode(data []byte) error {
	return walk(data, func(f field) error {
		switch f.num {
		case 1:
			return f.string(&s.Namespace)
		case 2:
			return f.string(&s.Name)
		case 3:
			return f.optString(&s.Path)
		case 4:
			return f.optInt32(&s.Port)
		}
		return nil
	})
}

func (s *CustomResourceDefinitionStatus) encode(e *encoder) {
	for i := range s.Conditions {
		e.message(1, s.Conditions[i].encode)
	}
	e.message(2, s.AcceptedNames.encode)
	e.strings(3, s.StoredVersions)
}

func (s *CustomResourceDefinitionStatus) decode(data []byte) error {
	return walk(data, func(f field) error {
		switch f.num {
		case 1:
			s.Conditions = append(s.Conditions, CustomResourceDefinitionCondition{})
			return f.message(s.Conditions[len(s.Conditions)-1].decode)
		case 2:
			return f.message(s.AcceptedNames.decode)
		case 3:
			return f.appendString(&s.StoredVersions)
		}
		return nil
	})
}

func (c *CustomResourceDefinitionCondition) encode(e *encoder) {
	e.string(1, string(c.Type))
	e.string(2, string(c.Status))
	e.marshaler(3, &c.LastTransitionTime)
	e.string(4, c.Reason)
	e.string(5, c.Message)
}

func (c *CustomResourceDefinitionCondition) decode(data []byte) error {
	return walk(data, func(f field) error {
		switch f.num {
		case 1:
			return f.string((*string)(&c.Type))
		case 2:
			return f.string((*string)(&c.Status))
		case 3:
			return f.unmarshal(&c.LastTransitionTime)
		case 4:
			return f.string(&c.Reason)
		case 5:
			return f.string(&c.Message)
		}
		return nil
	})
}
