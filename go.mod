module github.com/meazo-go/meazo

go 1.26
