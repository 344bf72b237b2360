/** The text a customer's message carries, for bots and keyword rules: a text body, a button's or list row's title. */
export function inboundText(type: string, content: Record<string, any>): string | null {
  if (type === 'text' && typeof content?.text?.body === 'string') return content.text.body;
  if (type === 'interactive') {
    const i = content?.interactive;
    const title = i?.button_reply?.title ?? i?.list_reply?.title;
    if (typeof title === 'string') return title;
  }
  if (type === 'button' && typeof content?.button?.text === 'string') return content.button.text;
  return null;
}
