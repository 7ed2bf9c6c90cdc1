
set edit:completion:arg-completer[pi] = { |@words|
    var index = (count $words)
    set index = (- $index 1)

    put (env _CLAP_IFS="\n" _CLAP_COMPLETE_INDEX=(to-string $index) PI_COMPLETE="elvish" pi -- $@words) | to-lines
}

