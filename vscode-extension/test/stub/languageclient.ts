// Stand-in for `vscode-languageclient/node`: a LanguageClient that answers requests from a
// table the test fills and lets the test deliver server notifications.
/* eslint-disable @typescript-eslint/no-explicit-any */

export type ServerOptions = any;
export type LanguageClientOptions = any;

export class LanguageClient {
  static instances: LanguageClient[] = [];
  /** method → answer (a function of the params, or a value). */
  static answers = new Map<string, any>();
  /** What the server answers to `initialize` (the test sets it before activation). */
  static initializeResult: any = { capabilities: {} };
  initializeResult: any;
  readonly requests: Array<{ method: string; params: any }> = [];
  readonly notificationsSent: Array<{ method: string; params: any }> = [];
  private handlers = new Map<string, (p: any) => void>();
  started = false;
  stopped = false;

  constructor(
    readonly id: string,
    readonly name: string,
    readonly serverOptions: ServerOptions,
    readonly clientOptions: LanguageClientOptions,
  ) {
    LanguageClient.instances.push(this);
  }

  async start(): Promise<void> {
    this.started = true;
    this.initializeResult = structuredClone(LanguageClient.initializeResult);
  }

  async stop(): Promise<void> {
    this.stopped = true;
  }

  async sendRequest(method: string, params: any): Promise<any> {
    this.requests.push({ method, params });
    if (!LanguageClient.answers.has(method)) throw new Error(`stub: no answer for ${method}`);
    const a = LanguageClient.answers.get(method);
    return typeof a === 'function' ? a(params) : structuredClone(a);
  }

  async sendNotification(method: string, params: any): Promise<void> {
    this.notificationsSent.push({ method, params });
  }

  onNotification(method: string, h: (p: any) => void): { dispose(): void } {
    this.handlers.set(method, h);
    return { dispose: () => this.handlers.delete(method) };
  }

  /** Test helper: the server sends a notification. */
  deliver(method: string, params: any): void {
    const h = this.handlers.get(method);
    if (!h) throw new Error(`stub: nobody listens to ${method}`);
    h(params);
  }
}
