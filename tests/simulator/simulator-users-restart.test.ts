/**
 * The simulator keeps its WhatsApp users across a restart (issue 60, item 3): a username customer
 * known by user id writes again after the simulator restarted on its data folder, and a reply to a
 * user id is found by `/_sim/messages?to=<user id>`.
 */
import { describe, expect, it } from '@jest/globals';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { createSimulator } from '../../simulator/app.js';

describe('the simulator keeps its users across a restart', () => {
  it('When the simulator restarts between a username customer\'s two messages, then the second is from the same user (user id, username, phone) and a reply by user id is found by to=<user id>', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-test-simusers-'));
    // The business's webhook: what the simulator delivers.
    const delivered: string[] = [];
    const receiver = http.createServer((req, res) => {
      let text = '';
      req.on('data', (c) => (text += c));
      req.on('end', () => {
        delivered.push(text);
        res.end('ok');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    let s = createSimulator({ dataDir: dir, autoStatusDelaysMs: null });
    try {
      const pn = (await request(s.app).post('/_sim/phone-numbers').send({ callback_url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/cb`, app_secret: 'sec' }).expect(201)).body;
      const u = (await request(s.app).post('/_sim/users').send({ phone_number_id: pn.phone_number_id, username: 'ada.l', phone: '+14155550101', name: 'Ada' }).expect(201)).body;
      expect((await request(s.app).post('/_sim/inbound').send({ phone_number_id: pn.phone_number_id, user_id: u.user_id, text: 'first' })).status).toBe(200);
      await s.close();

      s = createSimulator({ dataDir: dir, autoStatusDelaysMs: null });
      const again = await request(s.app).post('/_sim/inbound').send({ phone_number_id: pn.phone_number_id, user_id: u.user_id, text: 'second' });
      expect(again.status).toBe(200);
      // The webhook names the same user as before the restart, with its username.
      expect(again.body.delivered).toBe(true);
      const second = delivered.find((c) => c.includes('"second"'));
      expect(second).toBeDefined();
      expect(second).toContain(u.user_id);
      expect(second).toContain('ada.l');

      // A reply by recipient (the user id): found by to=<user id>.
      const reply = await request(s.app).post(`/v26.0/${pn.phone_number_id}/messages`).set('Authorization', `Bearer ${pn.access_token}`)
        .send({ messaging_product: 'whatsapp', recipient_type: 'individual', recipient: u.user_id, type: 'text', text: { body: 'hello Ada' } });
      expect({ status: reply.status, body: reply.status === 200 ? undefined : reply.body }).toEqual({ status: 200 });
      const found = (await request(s.app).get(`/_sim/messages?phone_number_id=${pn.phone_number_id}&to=${encodeURIComponent(u.user_id)}`)).body.data;
      expect(found.map((m: any) => m.payload.text.body)).toEqual(['hello Ada']);
      expect(found[0].user_id).toBe(u.user_id);
    } finally {
      await s.close();
      receiver.closeAllConnections();
      await new Promise((r) => receiver.close(r));
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
