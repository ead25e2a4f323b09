package cli

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Command is one entry of a program's command table, for completion.
type Command struct {
	Name    string
	Summary string
	// Subcommands are the words that may follow Name (registry migrate).
	Subcommands []string
	// Flags are the FlagSets the command parses (several when its
	// subcommands or modes define different flags).
	Flags []*flag.FlagSet
}

// flagWords returns the --name words of c, sorted and unique.
func (c Command) flagWords() []string {
	seen := map[string]bool{}
	var out []string
	for _, fs := range c.Flags {
		fs.VisitAll(func(f *flag.Flag) {
			if !seen[f.Name] {
				seen[f.Name] = true
				out = append(out, "--"+f.Name)
			}
		})
	}
	sort.Strings(out)
	return out
}

// Shells are the shells Completion writes scripts for.
var Shells = []string{"bash", "zsh", "fish"}

// Completion writes the completion script of prog for shell: the command
// names (with their summaries where the shell shows them), each command's
// subcommands and flags; file names elsewhere.
func Completion(w io.Writer, shell, prog string, cmds []Command) error {
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	var b strings.Builder
	switch shell {
	case "bash":
		bashCompletion(&b, prog, cmds)
	case "zsh":
		zshCompletion(&b, prog, cmds)
	case "fish":
		fishCompletion(&b, prog, cmds)
	default:
		return Usagef("shell %q: want one of %s", shell, strings.Join(Shells, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func names(cmds []Command) string {
	var out []string
	for _, c := range cmds {
		out = append(out, c.Name)
	}
	return strings.Join(out, " ")
}

// ident turns prog into a shell function name.
func ident(prog string) string { return strings.NewReplacer("-", "_", ".", "_").Replace(prog) }

func bashCompletion(b *strings.Builder, prog string, cmds []Command) {
	fn := "_" + ident(prog)
	fmt.Fprintf(b, "# bash completion for %s: source it, or put it in bash-completion's completions directory.\n", prog)
	fmt.Fprintf(b, "%s() {\n", fn)
	b.WriteString("\tlocal cur=\"${COMP_WORDS[COMP_CWORD]}\" cmd=\"${COMP_WORDS[1]}\" words=\"\"\n")
	fmt.Fprintf(b, "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n\t\tCOMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n\t\treturn\n\tfi\n", names(cmds))
	b.WriteString("\tcase \"$cmd\" in\n")
	for _, c := range cmds {
		if len(c.Subcommands) > 0 {
			fmt.Fprintf(b, "\t%s)\n\t\tif [ \"$COMP_CWORD\" -eq 2 ]; then\n\t\t\tCOMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n\t\t\treturn\n\t\tfi\n", c.Name, strings.Join(c.Subcommands, " "))
		} else {
			fmt.Fprintf(b, "\t%s)\n", c.Name)
		}
		fmt.Fprintf(b, "\t\twords=\"%s\"\n\t\t;;\n", strings.Join(c.flagWords(), " "))
	}
	b.WriteString("\tesac\n")
	b.WriteString("\tcase \"$cur\" in\n\t-*) COMPREPLY=($(compgen -W \"$words\" -- \"$cur\")) ;;\n\t*) COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n\tesac\n}\n")
	fmt.Fprintf(b, "complete -o filenames -F %s %s\n", fn, prog)
}

// shortSummary is a summary cut for a completion menu.
func shortSummary(s string) string {
	if i := strings.IndexAny(s, ":;("); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func zshCompletion(b *strings.Builder, prog string, cmds []Command) {
	fn := "_" + ident(prog)
	fmt.Fprintf(b, "#compdef %s\n# zsh completion for %s: put it in a directory of $fpath as %s.\n", prog, prog, fn)
	fmt.Fprintf(b, "%s() {\n\tlocal -a commands flags\n\tcommands=(\n", fn)
	for _, c := range cmds {
		fmt.Fprintf(b, "\t\t'%s:%s'\n", c.Name, strings.ReplaceAll(shortSummary(c.Summary), "'", "'\\''"))
	}
	b.WriteString("\t)\n\tif (( CURRENT == 2 )); then\n\t\t_describe command commands\n\t\treturn\n\tfi\n\tcase $words[2] in\n")
	for _, c := range cmds {
		fmt.Fprintf(b, "\t%s)\n", c.Name)
		if len(c.Subcommands) > 0 {
			fmt.Fprintf(b, "\t\tif (( CURRENT == 3 )); then\n\t\t\tcompadd -- %s\n\t\t\treturn\n\t\tfi\n", strings.Join(c.Subcommands, " "))
		}
		fmt.Fprintf(b, "\t\tflags=(%s)\n\t\t;;\n", strings.Join(c.flagWords(), " "))
	}
	b.WriteString("\tesac\n\tif [[ $PREFIX == -* ]]; then\n\t\tcompadd -- $flags\n\telse\n\t\t_files\n\tfi\n}\n")
	fmt.Fprintf(b, "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n\t%s \"$@\"\nelse\n\tcompdef %s %s\nfi\n", fn, fn, prog)
}

func fishCompletion(b *strings.Builder, prog string, cmds []Command) {
	fmt.Fprintf(b, "# fish completion for %s: put it in ~/.config/fish/completions/%s.fish.\n", prog, prog)
	q := func(s string) string { return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'" }
	for _, c := range cmds {
		fmt.Fprintf(b, "complete -c %s -f -n __fish_use_subcommand -a %s -d %s\n", prog, c.Name, q(shortSummary(c.Summary)))
	}
	for _, c := range cmds {
		cond := q("__fish_seen_subcommand_from " + c.Name)
		for _, s := range c.Subcommands {
			fmt.Fprintf(b, "complete -c %s -f -n %s -a %s\n", prog, cond, s)
		}
		seen := map[string]bool{}
		for _, fs := range c.Flags {
			fs.VisitAll(func(f *flag.Flag) {
				if seen[f.Name] {
					return
				}
				seen[f.Name] = true
				req := " -r"
				if IsBool(f) {
					req = ""
				}
				_, usage := flag.UnquoteUsage(f)
				fmt.Fprintf(b, "complete -c %s -n %s -l %s%s -d %s\n", prog, cond, f.Name, req, q(shortSummary(usage)))
			})
		}
	}
}
