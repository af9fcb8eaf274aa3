;;; csi-lsp with Eglot (Emacs 29+, where Eglot is built in).
;; Works: hover (eldoc: the frame's arguments and locals), never-executed lines as hint
;; diagnostics tagged Unnecessary (Flymake, faded with `eglot-diagnostic-tag-unnecessary-face'),
;; inlay hints (`eglot-inlay-hints-mode': crash point, frame calls, path steps).
;; Not in Eglot: code lenses, and the custom csi/lineStates notification (line colours);
;; the commands below use the requests that are also workspace commands (docs/protocol.md).

(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               ;; add  :initializationOptions (:executable "build/app" :core "core")
               ;; after "csi-lsp" to open a crash at start (or use a .csi.toml)
               '((c-mode c-ts-mode c++-mode c++-ts-mode) . ("csi-lsp"))))

(defun csi--command (command &optional arg)
  "Run the csi-lsp workspace COMMAND with the single argument ARG (a plist)."
  (let ((server (eglot-current-server))
        (args (vector (or arg (make-hash-table)))))
    (unless server (user-error "csi-lsp is not running in this buffer (M-x eglot)"))
    (if (fboundp 'eglot-execute)
        (eglot-execute server (list :command command :arguments args))
      (eglot-execute-command server command args))))

(defun csi-open-crash (executable core)
  "Open the crash of EXECUTABLE with its CORE dump in csi-lsp."
  (interactive "fExecutable: \nfCore: ")
  (csi--command "csi.openCrash" (list :executable (expand-file-name executable)
                                      :core (expand-file-name core))))

(defun csi-select-frame (frame)
  "Select FRAME (number as in the stack) of the crashed thread."
  (interactive "nFrame #: ")
  (csi--command "csi.selectFrame" (list :thread 0 :frame frame)))

(defun csi-step-back ()
  "Step back along the selected frame's path trace."
  (interactive)
  (csi--command "csi.stepPath" (list :delta -1)))

(defun csi-clear ()
  "Close the crash."
  (interactive)
  (csi--command "csi.clear"))
