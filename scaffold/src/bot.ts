/**
 * Your bot. `onMessage` runs for every message a customer sends, after the service stored it.
 * Edit this file (PUT /v1/files/src%2Fbot.ts or `npm run ops -- code push`), then deploy.
 */
import { emit, log, sendButtons, sendText, setState, type InboundMessage } from './platform/runtime/index.js';

export async function onMessage(message: InboundMessage): Promise<void> {
  // STOP, START and the project's other consent keywords: the service has already changed the
  // customer's consent (and confirmed it, if the project has a confirmation text). No echo.
  if (message.consent) return;
  const text = (message.text ?? '').trim().toLowerCase();

  if (text === 'menu') {
    await sendButtons(message.from, 'How can we help?', [
      { id: 'hours', title: 'Opening hours' },
      { id: 'human', title: 'Talk to a person' },
    ]);
    // A state of our own: PATCH /v1/conversations/{id} accepts it from now on.
    await setState(message.conversation.id, 'menu_shown');
    await emit('bot.menu_shown', { conversation_id: message.conversation.id });
    return;
  }

  if (message.conversation.state === 'menu_shown' && (text === 'talk to a person' || text === 'human')) {
    await setState(message.conversation.id, 'handover');
    await sendText(message.from, 'A colleague will answer you shortly.');
    return;
  }

  if (message.conversation.state === 'menu_shown' && (text === 'opening hours' || text === 'hours')) {
    await sendText(message.from, 'We are open Monday to Friday, 9:00 to 17:00.');
    return;
  }

  const sent = await sendText(message.from, `You said: ${message.text ?? `a ${message.type} message`}. Write "menu" for options.`);
  if (!sent.ok) log.warn('reply not sent', sent.error);
}
