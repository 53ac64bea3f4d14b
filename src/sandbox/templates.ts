/**
 * Templates the sandbox knows. A send by templateId is billed on the rendered text, so the
 * variables are substituted (`{name}` placeholders). Unknown ids and missing variables are
 * sandbox errors; extra variables are ignored, as template engines usually do.
 */
export interface TemplateDefinition {
  readonly id: string;
  readonly text: string;
  readonly variables: readonly string[];
}

function template(id: string, text: string): TemplateDefinition {
  const variables = [...text.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? '');
  return { id, text, variables };
}

export const TEMPLATES: Readonly<Record<string, TemplateDefinition>> = Object.fromEntries(
  [
    template('pub_verif_basic', 'Your verification code is {code}.'),
    template('pub_verif_ttl', 'Your verification code is {code}. It expires in {ttl} minutes.'),
    template('pub_verif_cn', '您的验证码为{code}，{ttl}分钟内有效，请勿泄露给他人。'),
    template('pub_notify_login', '您的账号于{time}在新设备登录，如非本人操作请及时修改密码。'),
  ].map((definition) => [definition.id, definition]),
);

export type RenderResult =
  { readonly ok: true; readonly text: string } | { readonly ok: false; readonly reason: 'unknown-template' | 'missing-variable'; readonly variable?: string };

export function renderTemplate(id: string, data: Readonly<Record<string, string>>): RenderResult {
  const definition = Object.hasOwn(TEMPLATES, id) ? TEMPLATES[id] : undefined;
  if (definition === undefined) return { ok: false, reason: 'unknown-template' };
  const missing = definition.variables.find((name) => !Object.hasOwn(data, name));
  if (missing !== undefined) return { ok: false, reason: 'missing-variable', variable: missing };
  return { ok: true, text: definition.text.replace(/\{(\w+)\}/g, (_whole, name: string) => data[name] ?? '') };
}
