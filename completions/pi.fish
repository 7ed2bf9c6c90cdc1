# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_pi_global_optspecs
    string join \n session-dir= h/help V/version
end

function __fish_pi_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_pi_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_pi_using_subcommand
    set -l cmd (__fish_pi_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c pi -n "__fish_pi_needs_command" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_needs_command" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_needs_command" -f -a "session" -d 'Create, read, extend and check session files'
complete -c pi -n "__fish_pi_needs_command" -f -a "prompt" -d 'Expand prompt templates and skills, list them, and assemble the system prompt'
complete -c pi -n "__fish_pi_needs_command" -f -a "context" -d 'Build the context a model sees from a session, and measure it'
complete -c pi -n "__fish_pi_needs_command" -f -a "compact" -d 'Summarize older entries of a session with a model, from the shell or cron'
complete -c pi -n "__fish_pi_needs_command" -f -a "models" -d 'List the configured models'
complete -c pi -n "__fish_pi_needs_command" -f -a "run" -d 'Run the agent: send a prompt, let the model use tools, and record it all in a session'
complete -c pi -n "__fish_pi_needs_command" -f -a "trust" -d 'Let a project\'s own hooks and tools (its .pi/) run, list trusted projects, revoke'
complete -c pi -n "__fish_pi_needs_command" -f -a "generate" -d 'Write the man pages and shell completions (for packagers and the repository)'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -f -a "new" -d 'Create a session file and print its path'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -f -a "list" -d 'List sessions, newest first'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -f -a "log" -d 'Print entries as JSONL: the active path from root to leaf, or all of them'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -f -a "append" -d 'Append entries or messages read as JSONL from stdin'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -f -a "branch" -d 'Move the session\'s leaf to an earlier entry, optionally with a summary of what is left'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -f -a "tree" -d 'Show the whole entry tree'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -f -a "show" -d 'Show the conversation of the active path as people read it'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -f -a "export" -d 'Export the session as a self-contained HTML page, Markdown, or a (redacted) session file'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -f -a "resume" -d 'Print the path of the most recent session of a directory'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -f -a "label" -d 'Set or clear the label of an entry'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -f -a "name" -d 'Set or clear the session\'s name'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -f -a "fork" -d 'Copy the path from the root to an entry into a new session file'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -f -a "check" -d 'Check a session file for problems, without changing it'
complete -c pi -n "__fish_pi_using_subcommand session; and not __fish_seen_subcommand_from new list log append branch tree show export resume label name fork check migrate" -f -a "migrate" -d 'Rewrite a version 1 or 2 session file as version 3, keeping a backup'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from new" -l cwd -d 'Working directory the session belongs to [default: the current directory]' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from new" -l id -d 'Session id [default: a new time-ordered UUID (v7)]' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from new" -l name -d 'Name the session (written as a session_info entry after the header)' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from new" -l parent-session -d 'Record the session this one comes from (a path, id or id prefix) in the header' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from new" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from new" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from new" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from list" -l cwd -d 'List the sessions of DIR [default: the current directory]' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from list" -l format -d 'Output format: human text on a terminal and JSON otherwise (auto), or either' -r -f -a "auto\t'Human text when stdout is a terminal, JSON otherwise'
json\t'JSON (JSONL): one record per line'
human\t'Human-readable text'"
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from list" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from list" -l all -d 'List the sessions of every directory'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from list" -l json -d 'Same as --format json'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from log" -l leaf -d 'Follow the path to this entry (id or unique prefix) instead of the session\'s leaf' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from log" -s n -l max-count -d 'Only the N entries nearest the leaf (the last N of --all), after --type and --filter' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from log" -l type -d 'Only entries of these types (comma-separated or repeated), e.g. message,compaction' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from log" -l filter -d 'Run this jq program on each entry and print its outputs instead of the entry' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from log" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from log" -l all -d 'Every entry of every branch, in file order'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from log" -l reverse -d 'Leaf first'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from log" -s r -l raw-output -d 'With --filter, print strings without quotes'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from log" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from log" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from append" -l parent -d 'Attach the first new entry to this entry (id or unique prefix) instead of the leaf' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from append" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from append" -l dry-run -d 'Validate and print the entries that would be written, without writing them'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from append" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from append" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from branch" -l summary -d 'Summarize the path being left (written as a branch_summary entry)' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from branch" -l summary-file -d 'Read the summary from a file (`-` for stdin)' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from branch" -l instructions -d 'With --summarize: what the summary should focus on' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from branch" -l hook -d 'Run COMMAND before the leaf moves, after the session_before_tree hooks of settings.json; EVENT must be session_before_tree (repeatable)' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from branch" -l model -d 'With --summarize: the model, as PROVIDER/ID [default: the session\'s model if it has a key, else defaultProvider/defaultModel from settings.json]' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from branch" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from branch" -l summarize -d 'Have a model summarize the path being left (the entries from the leaf back to the common ancestor with ENTRY), as the agent does when it leaves a branch'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from branch" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from branch" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from tree" -l leaf -d 'Highlight the path to this entry (id or unique prefix) instead of the session\'s leaf' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from tree" -l format -d 'Output format: human text on a terminal and JSON otherwise (auto), or either' -r -f -a "auto\t'Human text when stdout is a terminal, JSON otherwise'
json\t'JSON (JSONL): one record per line'
human\t'Human-readable text'"
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from tree" -l depth -d 'Text view: show side branches nested at most N deep (0: the active path and the roots only); deeper branches are folded into one line' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from tree" -l only -d 'Text view: only user messages, labelled entries, branch points and their first entries, or compactions and branch summaries' -r -f -a "user\t'User messages'
labels\t'Labelled entries'
branches\t'Branch points and the first entry of each of their branches'
compactions\t'Compactions and branch summaries'"
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from tree" -l around -d 'Text view: only the rows around this entry (id or unique prefix)' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from tree" -l context -d 'With --around: how many rows before and after it' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from tree" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from tree" -l json -d 'Same as --format json'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from tree" -l no-pager -d 'Print everything at once instead of through $PAGER'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from tree" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from tree" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from show" -l leaf -d 'Show the path to this entry (id or unique prefix) instead of the session\'s leaf' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from show" -l format -d 'text: for reading (colours and wrapping on a terminal); md: GitHub-flavoured Markdown' -r -f -a "text\t'Text to read: on a terminal in colour, wrapped and paged'
md\t'GitHub-flavoured Markdown'"
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from show" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from show" -l full -d 'Show tool results whole instead of their first lines'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from show" -l thinking -d 'Show the model\'s thinking'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from show" -l no-tools -d 'Leave out tool calls and their results'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from show" -l no-pager -d 'Print everything at once instead of through $PAGER'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from export" -s o -l output -d 'Write to FILE (created private, 0600) instead of stdout' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from export" -l format -d 'html: a self-contained page; md: Markdown; jsonl: a session file [default: from the extension of -o, else html]' -r -f -a "html\t'One self-contained HTML page with every branch'
md\t'GitHub-flavoured Markdown of the active path (every branch with --all)'
jsonl\t'A session file with the same ids and tree'"
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from export" -l leaf -d 'html: open the page on the branch of this entry; md: the path to it' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from export" -l redact-pattern -d 'Also redact what REGEX matches (repeatable; implies --redact)' -r
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from export" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from export" -l all -d 'md: every branch, not only the active path'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from export" -l full -d 'Show tool results whole instead of their first lines'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from export" -l thinking -d 'Show the model\'s thinking'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from export" -l no-tools -d 'Leave out tool calls and their results'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from export" -l redact -d 'Replace secrets with [redacted]: known API keys, token shapes, KEY=value lines'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from export" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from export" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from resume" -l cwd -d 'The working directory whose sessions to look at [default: the current directory]' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from resume" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from resume" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from resume" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from label" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from label" -l clear -d 'Remove the entry\'s label'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from label" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from label" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from name" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from name" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from name" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from fork" -l cwd -d 'Make the copy a session of DIR (stored with DIR\'s sessions) [default: the same directory and folder as the original]' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from fork" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from fork" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from fork" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from check" -l format -d 'Output format: human text on a terminal and JSON otherwise (auto), or either' -r -f -a "auto\t'Human text when stdout is a terminal, JSON otherwise'
json\t'JSON (JSONL): one record per line'
human\t'Human-readable text'"
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from check" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from check" -l json -d 'Same as --format json'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from check" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from migrate" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from migrate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand session; and __fish_seen_subcommand_from migrate" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand prompt; and not __fish_seen_subcommand_from expand list system" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand prompt; and not __fish_seen_subcommand_from expand list system" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand prompt; and not __fish_seen_subcommand_from expand list system" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand prompt; and not __fish_seen_subcommand_from expand list system" -f -a "expand" -d 'Expand `/template args` or `/skill:name args`; other text passes through unchanged'
complete -c pi -n "__fish_pi_using_subcommand prompt; and not __fish_seen_subcommand_from expand list system" -f -a "list" -d 'List the prompt templates and skills found, and the problems met loading them'
complete -c pi -n "__fish_pi_using_subcommand prompt; and not __fish_seen_subcommand_from expand list system" -f -a "system" -d 'Print the system prompt assembled for a directory'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from expand" -l cwd -d 'Work as if started in DIR: its .pi/ directory, .agents/skills and context files' -r -F
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from expand" -l prompt-dir -l prompt-template -d 'Also load templates from PATH, a .md file or a directory of them (repeatable; they lose name collisions with discovered ones). Relative to the current directory' -r
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from expand" -l skill-dir -l skill -d 'Also load skills from PATH, a skill file or a directory (repeatable; they lose name collisions with discovered ones). Relative to the current directory' -r
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from expand" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from expand" -l json -d 'Print {"text": …, "source": {"kind", "name", "path"}} instead of the text (source is null when nothing was expanded)'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from expand" -l as-message -d 'Print the result as a user message record, ready for `pi session append`'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from expand" -l no-prompt-templates -d 'Do not discover templates; load only the --prompt-dir paths'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from expand" -l no-skills -d 'Do not discover skills; load only the --skill-dir paths'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from expand" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from expand" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from list" -l cwd -d 'Work as if started in DIR: its .pi/ directory, .agents/skills and context files' -r -F
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from list" -l prompt-dir -l prompt-template -d 'Also load templates from PATH, a .md file or a directory of them (repeatable; they lose name collisions with discovered ones). Relative to the current directory' -r
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from list" -l skill-dir -l skill -d 'Also load skills from PATH, a skill file or a directory (repeatable; they lose name collisions with discovered ones). Relative to the current directory' -r
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from list" -l format -d 'Output format: human text on a terminal and JSON otherwise (auto), or either' -r -f -a "auto\t'Human text when stdout is a terminal, JSON otherwise'
json\t'JSON (JSONL): one record per line'
human\t'Human-readable text'"
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from list" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from list" -l no-prompt-templates -d 'Do not discover templates; load only the --prompt-dir paths'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from list" -l no-skills -d 'Do not discover skills; load only the --skill-dir paths'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from list" -l json -d 'Same as --format json'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l cwd -d 'Work as if started in DIR: its .pi/ directory, .agents/skills and context files' -r -F
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l prompt-dir -l prompt-template -d 'Also load templates from PATH, a .md file or a directory of them (repeatable; they lose name collisions with discovered ones). Relative to the current directory' -r
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l skill-dir -l skill -d 'Also load skills from PATH, a skill file or a directory (repeatable; they lose name collisions with discovered ones). Relative to the current directory' -r
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l tools -d 'Active tools, comma-separated, in this order [default: read,bash,edit,write and the tools given by --tool-snippet/--tool-guideline]' -r
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l tool -d 'A program tool, as `pi run --tool` takes it (repeatable); the program tools of <agent dir>/tools/ and of a trusted project\'s .pi/tools/ are always included' -r -F
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l tool-snippet -d 'Define a tool\'s one-line summary for the tool list, as NAME=TEXT (repeatable); a name that is not built in adds a custom tool' -r
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l tool-guideline -d 'Add a guideline that applies while tool NAME is active, as NAME=TEXT (repeatable)' -r
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l system-prompt -d 'Use TEXT instead of the default prompt and SYSTEM.md (if TEXT names an existing file, its contents)' -r
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l system-prompt-file -d 'Use the contents of FILE instead of the default prompt and SYSTEM.md' -r -F
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l append-system-prompt -d 'Append TEXT (if it names an existing file, its contents); repeatable, joined by blank lines; replaces APPEND_SYSTEM.md' -r
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l no-prompt-templates -d 'Do not discover templates; load only the --prompt-dir paths'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l no-skills -d 'Do not discover skills; load only the --skill-dir paths'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l no-tools -d 'No tools at all (unless --tools is also given)'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l no-context-files -d 'Leave out the AGENTS.md / CLAUDE.md context files'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -l json -d 'Print {"text", "tools", "contextFiles", "skills"} as JSON instead of the text'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand prompt; and __fish_seen_subcommand_from system" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand context; and not __fish_seen_subcommand_from build stats" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand context; and not __fish_seen_subcommand_from build stats" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand context; and not __fish_seen_subcommand_from build stats" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand context; and not __fish_seen_subcommand_from build stats" -f -a "build" -d 'Print the messages a model sees, as agent messages, LLM messages or a provider\'s request messages (JSONL)'
complete -c pi -n "__fish_pi_using_subcommand context; and not __fish_seen_subcommand_from build stats" -f -a "stats" -d 'Measure the context: messages, estimated and reported tokens, and whether the agent would compact it'
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from build" -l leaf -d 'Build the context of the path to this entry (id or unique prefix) instead of the leaf' -r
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from build" -l format -d 'Output: agent messages, LLM messages, or a provider\'s request messages' -r -f -a "agent\t'The agent messages, as stored and as the agent holds them (summaries, custom messages and shell commands as their own roles)'
llm\t'Provider-neutral messages: user, assistant and tool results only'
openai\t'The `messages` of an OpenAI Chat Completions request'
anthropic\t'The `messages` of an Anthropic Messages request'"
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from build" -l model -d 'The model the request is for, as PROVIDER/ID (openai and anthropic formats) [default: the model in effect at the end of the path]' -r
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from build" -l system-prompt-file -d 'The system prompt to send, read from FILE (`-` for stdin); the openai format starts with it, the others need --with-settings to carry it' -r -F
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from build" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from build" -l with-settings -d 'Start with a record {"type":"settings","thinkingLevel":…,"model":…} (and the system prompt, if given)'
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from build" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from build" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from stats" -l leaf -d 'Measure the context of the path to this entry (id or unique prefix) instead of the leaf' -r
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from stats" -l context-window -d 'The model\'s context window in tokens [default: from models.json or the built-in table for the model]' -r
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from stats" -l reserve-tokens -d 'Tokens kept free below the window [default: compaction.reserveTokens from settings.json, else 16384]' -r
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from stats" -l model -d 'Take the context window of this model, as PROVIDER/ID [default: the model in effect at the end of the path]' -r
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from stats" -l format -d 'Output format: human text on a terminal and JSON otherwise (auto), or either' -r -f -a "auto\t'Human text when stdout is a terminal, JSON otherwise'
json\t'JSON (JSONL): one record per line'
human\t'Human-readable text'"
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from stats" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from stats" -l json -d 'Same as --format json'
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from stats" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand context; and __fish_seen_subcommand_from stats" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand compact" -l leaf -d 'Compact the path to this entry (id or unique prefix) instead of the leaf; the compaction entry is appended as its child' -r
complete -c pi -n "__fish_pi_using_subcommand compact" -l cwd -d 'With --all: only the sessions of DIR' -r -F
complete -c pi -n "__fish_pi_using_subcommand compact" -l summary-file -d 'Use the summary in FILE (`-` for stdin) instead of asking a model; the file lists are appended to it' -r -F
complete -c pi -n "__fish_pi_using_subcommand compact" -l instructions -d 'Extra instructions for the summary (what to focus on)' -r
complete -c pi -n "__fish_pi_using_subcommand compact" -l reserve-tokens -d 'Tokens kept free below the context window; the summary may use 80% of it [default: compaction.reserveTokens from settings.json, else 16384]' -r
complete -c pi -n "__fish_pi_using_subcommand compact" -l keep-recent-tokens -d 'Tokens of recent messages kept as they are [default: compaction.keepRecentTokens from settings.json, else 20000]' -r
complete -c pi -n "__fish_pi_using_subcommand compact" -l context-window -d 'The context window for --if-needed [default: the session\'s model\'s, else the summary model\'s]' -r
complete -c pi -n "__fish_pi_using_subcommand compact" -l hook -d 'Run COMMAND before the summary is written, after the session_before_compact hooks of settings.json; EVENT must be session_before_compact (repeatable)' -r
complete -c pi -n "__fish_pi_using_subcommand compact" -l model -d 'The model that writes the summary, as PROVIDER/ID [default: the session\'s model if it has a key, else defaultProvider/defaultModel from settings.json]' -r
complete -c pi -n "__fish_pi_using_subcommand compact" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand compact" -l all -d 'Compact every session under the sessions directory (with --cwd: of that directory), printing one outcome record per session; sessions locked by a running writer are skipped'
complete -c pi -n "__fish_pi_using_subcommand compact" -l if-needed -d 'Compact only when the context is above the threshold the agent compacts at (contextWindow − reserveTokens); otherwise print {"compacted":false,…} and exit 0'
complete -c pi -n "__fish_pi_using_subcommand compact" -l exit-code -d 'With --if-needed: exit with status 3 when nothing needed compacting'
complete -c pi -n "__fish_pi_using_subcommand compact" -l dry-run -d 'Print the plan (cut point, tokensBefore, what is summarized and kept, split turn, file lists) without calling a model or writing anything'
complete -c pi -n "__fish_pi_using_subcommand compact" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand compact" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand models" -l format -d 'Output format: human text on a terminal and JSON otherwise (auto), or either' -r -f -a "auto\t'Human text when stdout is a terminal, JSON otherwise'
json\t'JSON (JSONL): one record per line'
human\t'Human-readable text'"
complete -c pi -n "__fish_pi_using_subcommand models" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand models" -l all -d 'Also list models without an API key configured'
complete -c pi -n "__fish_pi_using_subcommand models" -l json -d 'Same as --format json'
complete -c pi -n "__fish_pi_using_subcommand models" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand models" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand run" -s p -l prompt -d 'The prompt; `/template args` and `/skill:name args` are expanded [default: read from stdin]' -r
complete -c pi -n "__fish_pi_using_subcommand run" -l model -d 'The model, as PROVIDER/ID [default: the session\'s model if it has a key, else defaultProvider/defaultModel from settings.json]' -r
complete -c pi -n "__fish_pi_using_subcommand run" -l thinking -d 'Thinking level [default: the session\'s, else defaultThinkingLevel, else medium]; lowered or raised to the nearest level the model supports' -r -f -a "off\t''
minimal\t''
low\t''
medium\t''
high\t''
xhigh\t''"
complete -c pi -n "__fish_pi_using_subcommand run" -l tools -d 'Active tools, comma-separated, in this order [default: read,bash,edit,write, then every program tool]' -r
complete -c pi -n "__fish_pi_using_subcommand run" -l tool -d 'A program tool: an executable that prints its description when run with --describe and takes a call\'s arguments as JSON on stdin (repeatable)' -r -F
complete -c pi -n "__fish_pi_using_subcommand run" -l hook -d 'Run COMMAND (a shell command line) at EVENT, after the hooks of settings.json (repeatable)' -r
complete -c pi -n "__fish_pi_using_subcommand run" -l leaf -d 'Continue from this entry (id or unique prefix) instead of the leaf; the first new entry becomes its child' -r
complete -c pi -n "__fish_pi_using_subcommand run" -l max-turns -d 'Stop after N answers of the model (the tools of the last one still run)' -r
complete -c pi -n "__fish_pi_using_subcommand run" -l system-prompt -d 'Use TEXT instead of the default prompt and SYSTEM.md (if TEXT names an existing file, its contents)' -r
complete -c pi -n "__fish_pi_using_subcommand run" -l system-prompt-file -d 'Use the contents of FILE instead of the default prompt and SYSTEM.md' -r -F
complete -c pi -n "__fish_pi_using_subcommand run" -l append-system-prompt -d 'Append TEXT (if it names an existing file, its contents); repeatable, joined by blank lines; replaces APPEND_SYSTEM.md' -r
complete -c pi -n "__fish_pi_using_subcommand run" -l tool-choice -d 'Which tool the model must call: auto, none, required (some tool), or a tool\'s name [default: the provider\'s, auto]' -r
complete -c pi -n "__fish_pi_using_subcommand run" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand run" -l no-tools -d 'No tools at all (program tools included)'
complete -c pi -n "__fish_pi_using_subcommand run" -l no-builtin-tools -d 'No built-in tools; program tools stay active'
complete -c pi -n "__fish_pi_using_subcommand run" -l no-session -d 'Record nothing: no session file is created or written (a SESSION given is only read)'
complete -c pi -n "__fish_pi_using_subcommand run" -l no-context-files -d 'Leave out the AGENTS.md / CLAUDE.md context files'
complete -c pi -n "__fish_pi_using_subcommand run" -l json -d 'Print the event stream as JSON lines (the reference\'s JSON mode) instead of the assistant\'s text'
complete -c pi -n "__fish_pi_using_subcommand run" -l rpc -d 'Take commands as JSON lines on stdin and answer on stdout (the reference\'s RPC mode): prompt, steer, follow_up, abort, compact, get_state, get_messages, …'
complete -c pi -n "__fish_pi_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand run" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand trust" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand trust" -l list -d 'List the trusted projects, each with its state: trusted, changed (its files are no longer those trusted; with the files that changed) or missing'
complete -c pi -n "__fish_pi_using_subcommand trust" -l revoke -d 'Forget the project: its hooks and tools no longer run'
complete -c pi -n "__fish_pi_using_subcommand trust" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand trust" -s V -l version -d 'Print version'
complete -c pi -n "__fish_pi_using_subcommand generate" -l out -d 'Directory that receives man/ and completions/' -r -F
complete -c pi -n "__fish_pi_using_subcommand generate" -l session-dir -d 'Keep sessions in DIR instead of the per-project directory under the agent directory' -r -F
complete -c pi -n "__fish_pi_using_subcommand generate" -l check -d 'Compare with the files in DIR instead of writing; exit 1 if they differ'
complete -c pi -n "__fish_pi_using_subcommand generate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c pi -n "__fish_pi_using_subcommand generate" -s V -l version -d 'Print version'
