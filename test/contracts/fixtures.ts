import type { SendCommand, TextOperation, VoiceOperation } from '../../src/contracts/index.ts';

export const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);

export function textCommand(operation: Partial<Omit<TextOperation, 'kind'>> = {}, rest: Partial<SendCommand> = {}): SendCommand {
  return {
    commandId: 'cmd-1',
    createdAt: NOW - 1000,
    expiresAt: null,
    metadata: {},
    ...rest,
    operation: { kind: 'text', to: ['13800138000'], signature: '合一短信', content: '您的验证码是 1234', ...operation },
  };
}

export function voiceCommand(operation: Partial<Omit<VoiceOperation, 'kind'>> = {}, rest: Partial<SendCommand> = {}): SendCommand {
  return {
    commandId: 'cmd-2',
    createdAt: NOW - 1000,
    expiresAt: null,
    metadata: {},
    ...rest,
    operation: { kind: 'voice', to: '18509872103', code: '123456', ...operation },
  };
}
