complete --keep-order --exclusive --command pi --arguments "(PI_COMPLETE=fish pi -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
