# nsbox's R driver: a persistent interpreter for execute_code {language: "r"}
# in a kept sandbox.  Started (mcp/interp/interp.c) as
#   sh -c 'exec 3<&0 </dev/null; exec Rscript --no-save --no-restore /.nsbox/drivers/r_driver.R'
# so fd 3 = the driver channel (a stream socket), fd 0 = /dev/null, fd 1/2 =
# the code's output pipes.  docs/interpreters.md ("R") is the contract.
# Base R only (no jsonlite: Debian's r-base-core has none): the protocol's
# small messages are read and written by the JSON code below.  R cannot read
# a socket by its fd, so the channel is relayed by two `cat`s the driver
# starts with SIGINT ignored (the host interrupts a cell by SIGINT to the
# whole process group).
#
# Everything the driver keeps lives in the environment .nsbox (attached as
# a parent of the global environment, not in it): rm(list = ls()) in a cell
# does not touch it.
local({
  nsbox <- new.env()
  with(nsbox, {
    RESULT_CAP <- 65536L
    MESSAGE_CAP <- 65536L
    count <- 0L

    # ---- JSON (only what the protocol needs) ----
    json_str <- function(s) {
      s <- enc2utf8(as.character(s))
      s <- iconv(s, "UTF-8", "UTF-8", sub = "\uFFFD")
      s <- gsub("\\", "\\\\", s, fixed = TRUE)
      s <- gsub("\"", "\\\"", s, fixed = TRUE)
      s <- gsub("\n", "\\n", s, fixed = TRUE)
      s <- gsub("\r", "\\r", s, fixed = TRUE)
      s <- gsub("\t", "\\t", s, fixed = TRUE)
      if (grepl("[\001-\037\177]", s, useBytes = TRUE)) {
        for (b in c(1:31, 127)) {
          ch <- rawToChar(as.raw(b))
          s <- gsub(ch, sprintf("\\u%04x", b), s, fixed = TRUE, useBytes = TRUE)
        }
        Encoding(s) <- "UTF-8"
      }
      paste0("\"", s, "\"")
    }
    to_json <- function(x) {
      if (is.null(x)) return("null")
      if (inherits(x, "json_raw")) return(unclass(x))
      if (is.logical(x)) return(if (isTRUE(x)) "true" else "false")
      if (is.character(x)) return(json_str(x[[1]]))
      if (is.numeric(x)) return(format(x[[1]], scientific = FALSE))
      if (is.list(x) && !is.null(names(x))) {
        parts <- vapply(names(x), function(k) paste0(json_str(k), ":", to_json(x[[k]])), "")
        return(paste0("{", paste(parts, collapse = ","), "}"))
      }
      if (is.list(x))
        return(paste0("[", paste(vapply(x, to_json, ""), collapse = ","), "]"))
      "null"
    }
    # Decodes the escapes of a JSON string's inside.
    unescape <- function(s) {
      if (!grepl("\\", s, fixed = TRUE)) return(s)
      m <- gregexpr("\\\\u[dD][89abAB][0-9a-fA-F]{2}\\\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\\\u[0-9a-fA-F]{4}|\\\\.",
                    s, perl = TRUE)
      regmatches(s, m) <- list(vapply(regmatches(s, m)[[1]], function(e) {
        c1 <- substr(e, 2, 2)
        if (c1 != "u") {
          r <- switch(c1, n = "\n", t = "\t", r = "\r", b = "\b", f = "\f", c1)
          return(r)
        }
        hi <- strtoi(substr(e, 3, 6), 16L)
        if (nchar(e) == 12L) {
          lo <- strtoi(substr(e, 9, 12), 16L)
          return(intToUtf8(0x10000 + (hi - 0xD800) * 1024 + (lo - 0xDC00)))
        }
        if (hi == 0L || (hi >= 0xD800 && hi <= 0xDFFF)) return("\uFFFD")
        intToUtf8(hi)
      }, ""))
      s
    }
    # Parses one message: strings are cut out first (one regular
    # expression), the rest is a small skeleton parsed by hand.
    from_json <- function(text) {
      m <- gregexpr("\"(?:[^\"\\\\]++|\\\\.)*+\"", text, perl = TRUE)
      strs <- regmatches(text, m)[[1]]
      skel <- text
      regmatches(skel, m) <- list(rep("\001", length(strs)))
      chars <- strsplit(skel, "")[[1]]
      chars <- chars[!chars %in% c(" ", "\t", "\r", "\n")]
      pos <- 1L
      k <- 0L
      value <- function() {
        ch <- chars[pos]
        if (is.na(ch)) stop("json: truncated")
        if (ch == "\001") {
          pos <<- pos + 1L
          k <<- k + 1L
          s <- strs[k]
          return(unescape(substr(s, 2L, nchar(s) - 1L)))
        }
        if (ch == "{") {
          pos <<- pos + 1L
          out <- list()
          names(out) <- character(0)
          if (chars[pos] == "}") { pos <<- pos + 1L; return(out) }
          repeat {
            key <- value()
            if (!is.character(key) || chars[pos] != ":") stop("json: bad object")
            pos <<- pos + 1L
            v <- value()
            out[key] <- list(v)
            if (chars[pos] == ",") { pos <<- pos + 1L; next }
            if (chars[pos] == "}") { pos <<- pos + 1L; return(out) }
            stop("json: bad object")
          }
        }
        if (ch == "[") {
          pos <<- pos + 1L
          out <- list()
          if (chars[pos] == "]") { pos <<- pos + 1L; return(out) }
          repeat {
            out[[length(out) + 1L]] <- list(value())
            if (chars[pos] == ",") { pos <<- pos + 1L; next }
            if (chars[pos] == "]") { pos <<- pos + 1L; return(lapply(out, `[[`, 1L)) }
            stop("json: bad array")
          }
        }
        start <- pos
        while (!is.na(chars[pos]) && !chars[pos] %in% c(",", "}", "]", ":")) pos <<- pos + 1L
        word <- paste(chars[start:(pos - 1L)], collapse = "")
        if (word == "true") return(TRUE)
        if (word == "false") return(FALSE)
        if (word == "null") return(NULL)
        if (grepl("^-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?$", word))
          return(structure(word, class = "json_raw"))
        stop("json: bad value")
      }
      value()
    }

    # ---- the channel ----
    chan_in <- pipe("trap '' INT; exec cat <&3 3<&-", open = "rb")
    chan_out <- pipe("trap '' INT; exec cat >&3 3<&-", open = "wb")
    send <- function(msg) {
      writeLines(to_json(msg), chan_out, useBytes = TRUE)
      flush(chan_out)
    }
    # The next line, or NULL at EOF.  An interrupt that comes while waiting
    # (the host's timeout racing `done`) is held till the line is kept,
    # then dropped.
    line <- NULL
    receive <- function() {
      repeat {
        got <- FALSE
        tryCatch(suspendInterrupts({
          line <<- readLines(chan_in, n = 1L, encoding = "UTF-8", warn = FALSE)
          got <- TRUE
        }), interrupt = function(i) NULL)
        if (got) break
      }
      # A SIGINT while waiting stays pending once interrupts are allowed
      # again, till R next checks (every 1000 steps): checked here.
      tryCatch(for (k in seq_len(2002L)) NULL, interrupt = function(i) NULL)
      if (length(line) == 0L) NULL else line
    }

    clean <- function(text, cap) {
      text <- iconv(enc2utf8(text), "UTF-8", "UTF-8", sub = "\uFFFD")
      n <- nchar(text, type = "bytes")
      if (n <= cap) return(text)
      marker <- sprintf("\n... [truncated: %d bytes in all]", n)
      cut <- rawToChar(charToRaw(text)[seq_len(cap - nchar(marker))])
      Encoding(cut) <- "UTF-8"
      paste0(iconv(cut, "UTF-8", "UTF-8", sub = ""), marker)
    }

    # ---- the environment of one cell ----
    set_env <- function(env) {
      if (!is.list(env) || (length(env) > 0L && is.null(names(env))))
        stop("env must be an object of strings")
      ok <- vapply(env, function(v) is.character(v) && !inherits(v, "json_raw") && length(v) == 1L, TRUE)
      nm <- names(env)
      if (!all(ok) || any(nm == "" | grepl("=", nm, fixed = TRUE)))
        stop("env must be an object of strings")
      if (length(env) == 0L) return(NULL)
      old <- Sys.getenv(nm, unset = NA, names = TRUE)
      do.call(Sys.setenv, as.list(unlist(env)))
      old
    }
    restore_env <- function(old) {
      if (is.null(old)) return(invisible())
      for (k in names(old)) {
        if (is.na(old[[k]])) Sys.unsetenv(k) else do.call(Sys.setenv, structure(list(old[[k]]), names = k))
      }
    }

    # ---- one cell ----
    format_error <- function(e, calls) {
      call <- conditionCall(e)
      msg <- conditionMessage(e)
      head <- if (is.null(call)) paste0("Error: ", msg) else {
        dcall <- paste(deparse(call, nlines = 1L), collapse = "")
        sep <- if (nchar(dcall) + nchar(msg) > 58L) " : \n  " else " : "
        paste0("Error in ", dcall, sep, msg)
      }
      names_of <- vapply(calls, function(cl) {
        f <- cl[[1L]]
        if (is.name(f)) as.character(f) else paste(deparse(f, nlines = 1L), collapse = "")
      }, "")
      tb <- paste0(head, "\n")
      if (length(names_of) > 1L) tb <- paste0(tb, "Calls: ", paste(names_of, collapse = " -> "), "\n")
      tb
    }

    # Runs code in the global environment, expression by expression, as the
    # console would; returns what `done` needs.
    run_cell <- function(code, cell) {
      out <- list(status = "ok", result = NULL, error = NULL, interrupted = FALSE)
      calls <- NULL
      exprs <- tryCatch(parse(text = code, keep.source = FALSE, srcfile = NULL),
                        error = function(e) e)
      if (inherits(exprs, "error")) {
        msg <- sub("^<text>", paste0("cell-", cell), conditionMessage(exprs))
        tb <- paste0("Error: ", msg, "\n")
        cat(tb, file = stderr())
        out$status <- "error"
        out$error <- list(type = "SyntaxError", message = clean(msg, MESSAGE_CAP), name = "SyntaxError",
                          value = clean(msg, MESSAGE_CAP), traceback = clean(tb, MESSAGE_CAP))
        return(out)
      }
      n <- length(exprs)
      last <- NULL
      tryCatch(withCallingHandlers({
        for (i in seq_len(n)) {
          v <- withVisible(eval(exprs[[i]], envir = .GlobalEnv))
          if (i < n && v$visible) print(v$value)
          if (i == n && v$visible) last <- v
          flush(stdout())
        }
        if (!is.null(last)) {
          assign(".Last.value", last$value, envir = .GlobalEnv)
          text <- paste(utils::capture.output(print(last$value)), collapse = "\n")
          out$result <- clean(text, RESULT_CAP)
        }
      }, error = function(e) {
        calls <<- sys.calls()
      }), error = function(e) {
        # The code's own frames: below the driver's eval()s, above the
        # handler (and .handleSimpleError, stop) at the end.
        sc <- if (is.null(calls)) list() else calls
        is_fn <- function(cl, f) is.call(cl) && identical(cl[[1L]], as.name(f))
        mine <- quote(withVisible(eval(exprs[[i]], envir = .GlobalEnv)))
        j <- length(sc) + 1L
        for (k in seq_along(sc)) if (identical(sc[[k]], mine)) { j <- k + 1L; break }
        ours <- list()
        while (j <= length(sc) && is_fn(sc[[j]], "eval")) { ours[[length(ours) + 1L]] <- sc[[j]]; j <- j + 1L }
        user <- if (j <= length(sc)) sc[j:length(sc)] else list()
        if (length(user) > 0L) user <- user[-length(user)]
        while (length(user) > 0L && (is_fn(user[[length(user)]], ".handleSimpleError") ||
                                     is_fn(user[[length(user)]], "stop")))
          user <- user[-length(user)]
        call <- conditionCall(e)
        for (o in ours) if (identical(call, o)) call <- NULL
        if (!is.null(call) || !is.null(conditionCall(e))) e$call <- call
        tb <- format_error(e, user)
        cat(tb, file = stderr())
        type <- class(e)[[1L]]
        msg <- conditionMessage(e)
        out$status <<- "error"
        out$error <<- list(type = type, message = clean(msg, MESSAGE_CAP), name = type,
                           value = clean(msg, MESSAGE_CAP), traceback = clean(tb, MESSAGE_CAP))
      }, interrupt = function(i) {
        cat("\nInterrupted\n", file = stderr())
        out$status <<- "error"
        out$interrupted <<- TRUE
        out$error <<- list(type = "interrupt", message = "interrupted", name = "interrupt",
                           value = "interrupted", traceback = "")
      })
      out
    }

    sent <- FALSE
    handle <- function(msg) {
      count <<- count + 1L
      id <- msg[["id"]]
      old <- NULL
      on.exit(suspendInterrupts(restore_env(old)))
      env_err <- NULL
      if (!is.null(msg[["env"]]))
        old <- tryCatch(set_env(msg[["env"]]), error = function(e) { env_err <<- conditionMessage(e); NULL })
      code <- msg[["code"]]
      if (!is.null(env_err)) {
        r <- list(status = "error", result = NULL, interrupted = FALSE,
                  error = list(type = "TypeError", message = env_err, name = "TypeError",
                               value = env_err, traceback = ""))
      } else if (!is.character(code)) {
        r <- list(status = "error", result = NULL, interrupted = FALSE,
                  error = list(type = "TypeError", message = "code must be a string",
                               name = "TypeError", value = "code must be a string", traceback = ""))
      } else {
        r <- run_cell(code, count)
      }
      suspendInterrupts({
        restore_env(old)
        old <- NULL
        tryCatch(flush(stdout()), error = function(e) NULL)
        send_done(id, r)
      })
    }
    send_done <- function(id, r) {
      results <- if (is.null(r$result)) list() else list(list(text = r$result, is_main_result = TRUE))
      send(list(op = "done", id = id, status = r$status, result = r$result, error = r$error,
                interrupted = r$interrupted, figures = list(), execution_count = count,
                results = results))
      sent <<- TRUE
    }
    # An interrupt in the driver's own code around a cell (the host's
    # timeout racing the end of the cell) still gets its `done`.
    serve <- function(msg) {
      sent <<- FALSE
      # Taken: from here the cell may run (the host retries a cell on a new
      # interpreter only when this one died before saying so).
      suspendInterrupts(send(list(op = "got", id = msg[["id"]])))
      tryCatch(handle(msg), interrupt = function(i) NULL)
      if (!sent)
        suspendInterrupts(send_done(msg[["id"]], list(
          status = "error", result = NULL, interrupted = TRUE,
          error = list(type = "interrupt", message = "interrupted", name = "interrupt",
                       value = "interrupted", traceback = ""))))
    }

    main <- function() {
      options(warn = 1L)  # warnings as they happen, on stderr
      ver <- paste(R.version$major, R.version$minor, sep = ".")
      send(list(op = "ready", language = "r", version = ver))
      repeat {
        l <- receive()
        if (is.null(l)) break
        msg <- tryCatch(from_json(l), error = function(e) NULL)
        if (!is.list(msg) || is.null(names(msg)) || !identical(msg[["op"]], "run")) next
        serve(msg)
      }
    }
  })
  attach(nsbox, name = ".nsbox", warn.conflicts = FALSE)
  nsbox$main()
})
quit(save = "no", status = 0L)
