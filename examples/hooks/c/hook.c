/*
 * The audit policy hook in C, as a Claude Code–protocol command hook: it
 * reads the hook JSON on stdin and answers with its exit code, exactly as a
 * Claude Code command hook does — so the same source also runs as a native
 * Claude Code hook (cc -o hook hook.c).
 *
 * Blocks Bash commands that remove files recursively (`rm -r`, `rm -rf`,
 * `rm --recursive`, anywhere in a command line): exit 2 with the reason on
 * stderr. Logs every tool call to `<cwd>/.audit/tool-calls.jsonl` — the one
 * directory its settings grant. Exit 1 (a hook error) when it cannot log.
 * The same hook exists in Rust, Python and JavaScript next to this one.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/*
 * Exit codes. Claude Code's protocol needs code 2, but WASI preview 1's
 * adapter turns every non-zero exit into plain failure (1); WASI 0.2.12's
 * `exit-with-code` carries the code, so the WebAssembly build calls it
 * (componentize-command-hook declares the import). Natively, exit().
 */
#ifdef __wasi__
__attribute__((import_module("wasi:cli/exit@0.2.12"), import_name("exit-with-code")))
extern void wasi_exit_with_code(int status_code);
static void finish(int code) {
    fflush(stdout);
    fflush(stderr);
    wasi_exit_with_code(code);
    exit(code);
}
#else
static void finish(int code) { exit(code); }
#endif

/* ---- a small JSON reader: just enough to find top-level members ---- */

static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

/* Skips a string starting at its opening quote; NULL if malformed. */
static const char *skip_string(const char *p) {
    if (*p != '"') return NULL;
    for (p++; *p; p++) {
        if (*p == '\\') {
            if (!p[1]) return NULL;
            p++;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return NULL;
}

/* Skips any value; NULL if malformed. */
static const char *skip_value(const char *p) {
    p = skip_ws(p);
    if (*p == '"') return skip_string(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = skip_ws(p + 1);
        if (*p == close) return p + 1;
        for (;;) {
            if (close == '}') {
                p = skip_string(skip_ws(p));
                if (!p) return NULL;
                p = skip_ws(p);
                if (*p != ':') return NULL;
                p++;
            }
            p = skip_value(p);
            if (!p) return NULL;
            p = skip_ws(p);
            if (*p == ',') { p++; continue; }
            if (*p == close) return p + 1;
            return NULL;
        }
    }
    /* number, true, false, null */
    const char *start = p;
    while (*p && strchr(",}] \t\r\n", *p) == NULL) p++;
    return p == start ? NULL : p;
}

/* The value of member `key` of the object at `obj` (start, end), or NULL. */
static const char *member(const char *obj, const char *key, const char **end) {
    const char *p = skip_ws(obj);
    if (*p != '{') return NULL;
    p = skip_ws(p + 1);
    size_t len = strlen(key);
    while (*p == '"') {
        const char *k = p + 1;
        const char *after = skip_string(p);
        if (!after) return NULL;
        p = skip_ws(after);
        if (*p != ':') return NULL;
        const char *value = skip_ws(p + 1);
        const char *value_end = skip_value(value);
        if (!value_end) return NULL;
        if ((size_t)(after - 1 - k) == len && strncmp(k, key, len) == 0) {
            *end = value_end;
            return value;
        }
        p = skip_ws(value_end);
        if (*p != ',') return NULL;
        p = skip_ws(p + 1);
    }
    return NULL;
}

static void put_utf8(char **o, unsigned cp) {
    if (cp < 0x80) { *(*o)++ = (char)cp; }
    else if (cp < 0x800) { *(*o)++ = (char)(0xC0 | cp >> 6); *(*o)++ = (char)(0x80 | (cp & 0x3F)); }
    else { *(*o)++ = (char)(0xE0 | cp >> 12); *(*o)++ = (char)(0x80 | (cp >> 6 & 0x3F)); *(*o)++ = (char)(0x80 | (cp & 0x3F)); }
}

/* A decoded copy of the string value at `p` (malloc'd), or NULL. */
static char *string_value(const char *p) {
    const char *end = skip_string(p);
    if (!end) return NULL;
    char *out = malloc((size_t)(end - p) * 3 + 1), *o = out;
    if (!out) return NULL;
    for (p++; p < end - 1; p++) {
        if (*p != '\\') { *o++ = *p; continue; }
        switch (*++p) {
            case 'n': *o++ = '\n'; break;
            case 't': *o++ = '\t'; break;
            case 'r': *o++ = '\r'; break;
            case 'b': *o++ = '\b'; break;
            case 'f': *o++ = '\f'; break;
            case 'u': {
                unsigned cp = 0;
                for (int i = 0; i < 4 && p[1]; i++) {
                    char c = *++p;
                    cp = cp * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 32) - 'a' + 10);
                }
                put_utf8(&o, cp);
                break;
            }
            default: *o++ = *p; /* \" \\ \/ */
        }
    }
    *o = 0;
    return out;
}

static char *string_member(const char *obj, const char *key) {
    const char *end;
    const char *v = member(obj, key, &end);
    return v && *v == '"' ? string_value(v) : NULL;
}

/* ---- the policy ---- */

static const char *WRAPPERS[] = {"sudo", "command", "env", "nice", "nohup", "time", "xargs", "exec", NULL};

static int is_wrapper(const char *word) {
    for (int i = 0; WRAPPERS[i]; i++)
        if (strcmp(word, WRAPPERS[i]) == 0) return 1;
    return strchr(word, '=') != NULL;
}

/* Splits `segment` into words in place (quotes removed); returns the count. */
static int words(char *segment, char **out, int max) {
    int n = 0;
    char *r = segment, *w = segment;
    while (*r && n < max) {
        while (*r == ' ' || *r == '\t') r++;
        if (!*r) break;
        out[n++] = w;
        char quote = 0;
        while (*r && (quote || (*r != ' ' && *r != '\t'))) {
            if (quote && *r == quote) { quote = 0; r++; continue; }
            if (!quote && (*r == '\'' || *r == '"')) { quote = *r++; continue; }
            *w++ = *r++;
        }
        if (*r) r++;
        *w++ = 0;
    }
    return n;
}

/* The first simple command that is `rm` with a recursive flag (malloc'd). */
static char *recursive_rm(const char *command) {
    const char *start = command;
    for (const char *p = command;; p++) {
        if (*p && strchr(";&|\n()`", *p) == NULL) continue;
        size_t len = (size_t)(p - start);
        char *segment = malloc(len + 1), *copy = malloc(len + 1);
        if (!segment || !copy) { free(segment); free(copy); return NULL; }
        memcpy(segment, start, len); segment[len] = 0;
        memcpy(copy, start, len); copy[len] = 0;
        char *argv[256];
        int argc = words(copy, argv, 256), i = 0;
        while (i < argc && is_wrapper(argv[i])) i++;
        int hit = 0;
        if (i < argc) {
            const char *slash = strrchr(argv[i], '/');
            if (strcmp(slash ? slash + 1 : argv[i], "rm") == 0) {
                for (i++; i < argc; i++) {
                    const char *a = argv[i];
                    if (strcmp(a, "--") == 0) break;
                    if (strcmp(a, "--recursive") == 0 ||
                        (a[0] == '-' && a[1] != '-' && (strchr(a, 'r') || strchr(a, 'R')))) { hit = 1; break; }
                }
            }
        }
        free(copy);
        if (hit) {
            /* trim */
            char *s = segment, *e = segment + len;
            while (*s == ' ' || *s == '\t') s++;
            while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
            *e = 0;
            memmove(segment, s, (size_t)(e - s) + 1);
            return segment;
        }
        free(segment);
        if (!*p) return NULL;
        start = p + 1;
    }
}

static char *read_all(FILE *f) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (size_t n; buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
        len += n;
        if (cap - len < 2) {
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger) { free(buf); return NULL; }
            buf = bigger;
        }
    }
    if (buf) buf[len] = 0;
    return buf;
}

/* Writes `s` as a JSON string. */
static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

int main(void) {
    char *input = read_all(stdin);
    if (!input) { fprintf(stderr, "cannot read the hook input\n"); finish(1); }
    char *event = string_member(input, "hook_event_name");
    char *tool = string_member(input, "tool_name");
    char *cwd = string_member(input, "cwd");
    char *session = string_member(input, "session_id");
    char *id = string_member(input, "tool_use_id");
    if (!event || strcmp(event, "PreToolUse") != 0 || !tool || !cwd) finish(0);

    const char *input_end;
    const char *tool_input = member(input, "tool_input", &input_end);
    char *blocked = NULL;
    if (strcmp(tool, "Bash") == 0 && tool_input) {
        char *command = string_member(tool_input, "command");
        if (command) blocked = recursive_rm(command);
        free(command);
    }

    /* An unlogged call is an error: exit 1, and carapace denies the call
       when the settings say the hook fails closed. */
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/.audit", cwd);
    snprintf(path, sizeof path, "%s/tool-calls.jsonl", dir);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "cannot write the audit log: %s: %s\n", dir, strerror(errno));
        finish(1);
    }
    /* The line is built first and appended in one write: hooks run in
       parallel, and whole-line appends do not interleave. */
    char *line = NULL;
    size_t line_len = 0;
    FILE *log = open_memstream(&line, &line_len);
    if (!log) {
        fprintf(stderr, "cannot write the audit log: %s\n", strerror(errno));
        finish(1);
    }
    fprintf(log, "{\"time\":%lld,\"hook\":\"c\",\"session_id\":", (long long)time(NULL));
    json_string(log, session ? session : "");
    fputs(",\"tool_use_id\":", log);
    json_string(log, id ? id : "");
    fputs(",\"tool_name\":", log);
    json_string(log, tool);
    fputs(",\"tool_input\":", log);
    if (tool_input) fwrite(tool_input, 1, (size_t)(input_end - tool_input), log);
    else fputs("null", log);
    fprintf(log, ",\"verdict\":\"%s\"}\n", blocked ? "deny" : "pass");
    fclose(log);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0 || write(fd, line, line_len) != (ssize_t)line_len || close(fd) != 0) {
        fprintf(stderr, "cannot write the audit log: %s: %s\n", path, strerror(errno));
        finish(1);
    }
    free(line);
    if (blocked) {
        fprintf(stderr,
                "Recursive deletion is blocked by the audit policy hook: `%s`. Remove specific files instead.\n",
                blocked);
        finish(2);
    }
    finish(0);
}
